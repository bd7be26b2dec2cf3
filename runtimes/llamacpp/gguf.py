"""GGUF header reader: the key/values an artifact chain needs, without loading the model.

The format is a little-endian header: magic "GGUF", version (uint32), tensor count and kv count
(uint64 since v2), then typed key/value pairs. Large arrays (vocabulary, merges) are skipped,
only their element type and length are kept, so reading a header takes milliseconds.
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TypedDict

from runtimes.base import as_int

# llama.cpp's enum llama_ftype (include/llama.h); gaps are types llama.cpp has removed.
FILE_TYPES: dict[int, str] = {
    0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1",
    10: "Q2_K", 11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M",
    16: "Q5_K_S", 17: "Q5_K_M", 18: "Q6_K", 19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S",
    22: "IQ3_XS", 23: "IQ3_XXS", 24: "IQ1_S", 25: "IQ4_NL", 26: "IQ3_S", 27: "IQ3_M",
    28: "IQ2_S", 29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M", 32: "BF16", 36: "TQ1_0", 37: "TQ2_0",
    38: "MXFP4_MOE", 39: "NVFP4", 40: "Q1_0", 41: "Q2_0",
}

_SCALARS = {
    0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d",
}
_STRING, _ARRAY = 8, 9
_SMALL_ARRAY = 64  # arrays up to this length are kept whole (e.g. rope sections); larger ones summarised


class GGUFError(ValueError):
    """The file is not a readable GGUF (wrong magic, unsupported version, truncated header)."""


@dataclass(frozen=True)
class ArraySummary:
    """Stands in for a large array value: its element type and length."""

    item_type: int
    length: int


# A metadata value: a number, a flag, a string, a small array of them, or a large array's summary.
GGUFValue = int | float | bool | str | list["GGUFValue"] | ArraySummary


@dataclass
class GGUFInfo:
    version: int
    tensor_count: int
    metadata: dict[str, GGUFValue] = field(default_factory=dict)

    @property
    def architecture(self) -> str:
        return str(self.metadata.get("general.architecture", ""))

    def arch_value(self, suffix: str) -> GGUFValue | None:
        return self.metadata.get(f"{self.architecture}.{suffix}")


def quantization_name(file_type: GGUFValue | None) -> str:
    if file_type is None:
        return "unknown"
    return FILE_TYPES.get(as_int(file_type), f"unknown({file_type})")


class _Reader:
    def __init__(self, buf: mmap.mmap | bytes, path: str) -> None:
        self.buf, self.pos, self.path = buf, 0, path

    def take(self, n: int) -> bytes:
        end = self.pos + n
        if n < 0 or end > len(self.buf):
            raise GGUFError(f"{self.path}: truncated GGUF header (needed {n} bytes at offset {self.pos})")
        chunk = self.buf[self.pos : end]
        self.pos = end
        return chunk

    def scalar(self, fmt: str) -> int | float | bool:
        value: int | float | bool = struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]
        return value

    def count(self, fmt: str) -> int:
        """An unsigned integer field (a length, a count, a type)."""
        value: int = struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]
        return value

    def string(self) -> str:
        return self.take(self.count("<Q")).decode("utf-8", errors="replace")

    def skip_string(self) -> None:
        length = self.count("<Q")
        self.pos += length
        if self.pos > len(self.buf):
            raise GGUFError(f"{self.path}: truncated GGUF header (string runs past end of file)")

    def value(self, vtype: int) -> GGUFValue:
        if vtype in _SCALARS:
            return self.scalar(_SCALARS[vtype])
        if vtype == _STRING:
            return self.string()
        if vtype == _ARRAY:
            item_type, length = self.count("<I"), self.count("<Q")
            if length <= _SMALL_ARRAY:
                return [self.value(item_type) for _ in range(length)]
            self.skip_array(item_type, length)
            return ArraySummary(item_type, length)
        raise GGUFError(f"{self.path}: unknown GGUF value type {vtype} at offset {self.pos}")

    def skip_array(self, item_type: int, length: int) -> None:
        if item_type in _SCALARS:
            self.take(struct.calcsize(_SCALARS[item_type]) * length)
        elif item_type == _STRING:
            for _ in range(length):
                self.skip_string()
        else:
            for _ in range(length):
                self.value(item_type)


def read_gguf(path: str | os.PathLike[str]) -> GGUFInfo:
    """Header and metadata of a GGUF file; GGUFError with the reason when it is not one."""
    path = os.fspath(path)
    try:
        fh = open(path, "rb")
    except OSError as exc:
        raise GGUFError(f"{path}: cannot open ({exc.strerror or exc})") from exc
    with fh:
        size = os.fstat(fh.fileno()).st_size
        if size < 24:
            raise GGUFError(f"{path}: too small to be a GGUF file ({size} bytes)")
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            r = _Reader(buf, path)
            magic = r.take(4)
            if magic != b"GGUF":
                raise GGUFError(f"{path}: not a GGUF file (magic {magic!r}, expected b'GGUF')")
            version = r.count("<I")
            if version not in (1, 2, 3):
                raise GGUFError(f"{path}: unsupported GGUF version {version}")
            count_fmt = "<I" if version == 1 else "<Q"
            tensor_count, kv_count = r.count(count_fmt), r.count(count_fmt)
            info = GGUFInfo(version=version, tensor_count=tensor_count)
            for _ in range(kv_count):
                key = r.string()
                info.metadata[key] = r.value(r.count("<I"))
    return info


def _present(meta: Mapping[str, GGUFValue], mapping: dict[str, str]) -> dict[str, object]:
    return {name: meta[key] for name, key in mapping.items() if key in meta and meta[key] not in ("", None)}


class ChainSections(TypedDict):
    """The sections of an artifact chain that a GGUF header records (the backend adds the others)."""

    source: dict[str, object]
    conversion: dict[str, object]
    quantization: dict[str, object]
    tokenizer: dict[str, object]
    context: dict[str, object]


def chain_sections(info: GGUFInfo) -> ChainSections:
    """The parts of an artifact chain that the GGUF itself records."""
    import hashlib

    meta = info.metadata
    source = _present(
        meta,
        {
            "name": "general.name", "basename": "general.basename", "finetune": "general.finetune",
            "size_label": "general.size_label", "organization": "general.organization",
            "license": "general.license", "version": "general.version", "url": "general.url",
            "repo_url": "general.repo_url", "source_url": "general.source.url",
            "source_repo_url": "general.source.repo_url",
        },
    )
    source["architecture"] = info.architecture
    bases = []
    for i in range(as_int(meta.get("general.base_model.count", 0) or 0)):
        prefix = f"general.base_model.{i}."
        bases.append({k[len(prefix):]: v for k, v in meta.items() if k.startswith(prefix)})
    if bases:
        source["base_model"] = bases
    conversion: dict[str, object] = {"tool": "llama.cpp convert/gguf", "gguf_version": info.version}
    if "general.quantized_by" in meta:
        conversion["quantized_by"] = meta["general.quantized_by"]
    file_type = meta.get("general.file_type")
    template = meta.get("tokenizer.chat_template")
    tokenizer = _present(
        meta,
        {
            "model": "tokenizer.ggml.model", "pre": "tokenizer.ggml.pre",
            "bos_token_id": "tokenizer.ggml.bos_token_id", "eos_token_id": "tokenizer.ggml.eos_token_id",
        },
    )
    vocab = meta.get("tokenizer.ggml.tokens")
    if isinstance(vocab, ArraySummary):
        tokenizer["vocab_size"] = vocab.length
    tokenizer["chat_template_sha256"] = (
        hashlib.sha256(template.encode("utf-8")).hexdigest() if isinstance(template, str) else None
    )
    return {
        "source": source,
        "conversion": conversion,
        "quantization": {
            "file_type": file_type,
            "name": quantization_name(file_type),
            "quantization_version": meta.get("general.quantization_version"),
        },
        "tokenizer": tokenizer,
        "context": {"n_ctx_train": info.arch_value("context_length")},
    }
