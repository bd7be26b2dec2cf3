"""Convert a local sentence-transformers directory once to an ONNX directory the gateway embeds with, no torch.

``manualqa embedder convert SRC OUT [--int8]`` (gateway/cli/embedder.py) calls `convert`. The output
directory holds:

- ``model.onnx``: the whole sentence-transformers pipeline up to the sentence vector, the transformer,
  its pooling (mean, cls or last token, as 1_Pooling/config.json says) and any Dense layers folded in,
  so the graph's output is one vector per text (opset 17, dynamic batch and sequence axes);
- ``tokenizer.json``: the source's, byte for byte;
- ``manualqa_embedder.json`` (`CONFIG_FILE`): what retrieval.embedders.onnx needs to reproduce
  sentence-transformers exactly: pooling mode, the Dense layers folded, whether the source normalises,
  ``max_seq_length``, the query and document prompts of its config_sentence_transformers.json
  (EmbeddingGemma: ``"task: search result | query: "`` and ``"title: none | text: "``), and the check
  below.

Then ``embedding.model = "onnx:OUT"``; the next ingest re-embeds every manual (the model id and hash
differ from the index's). `--int8` quantizes the weights as the built-in embedder's are
(deploy/make_embedder.py: dynamic, per channel, reduced range); keep it only where retrieval holds up
(docs/bench/experiments/brought_embedder.md).

The conversion checks itself: a few English, German and Chinese questions and passages, embedded by
sentence-transformers and by the ONNX directory through the gateway's own embedder, must agree to a
cosine of at least `MIN_COSINE_FP32` (fp32) or `MIN_COSINE_INT8` (int8), or it fails.

Needs torch, sentence-transformers (the [st] extra) and the ``onnx`` package, none of which the gateway
needs at run time; they are imported only inside the functions that run the conversion (here and in
retrieval.embedders.convert_export, which writes the model file), with an install hint when missing. The
record and `describe` are retrieval.embedders.convert_record's.
"""

from __future__ import annotations

import importlib.metadata
import json
import shutil
import unicodedata
from pathlib import Path
from typing import TYPE_CHECKING

from retrieval.embedders.convert_export import INSTALL_HINT, export_onnx, write_model
from retrieval.embedders.convert_record import (
    CONFIG_FILE,
    Agreement,
    ConvertError,
    EmbedderRecord,
    _read_table,
    _table,
    _text,
    describe,
)

if TYPE_CHECKING:  # imported to run only where the conversion needs them (the [st] extra)
    from sentence_transformers import SentenceTransformer

MIN_COSINE_FP32 = 0.99
MIN_COSINE_INT8 = 0.95
CHECK_QUERIES = ["How do I reset the controller to factory settings?", "What torque for the M8 bolts?",
                 "Wie setze ich das Gerät auf Werkseinstellungen zurück?", "如何更换滤芯？"]
CHECK_PASSAGES = [
    "Factory reset\nHold the MODE button for ten seconds until the status LED blinks red twice.",
    "Tighten the M8 mounting bolts to 25 N·m in a cross pattern; check again after 50 operating hours.",
    "Zurücksetzen: Halten Sie die Taste MODE zehn Sekunden lang gedrückt, bis die LED rot blinkt.",
    "更换滤芯：关闭电源，逆时针旋转滤芯外壳，取出旧滤芯并装入新滤芯。",
    # longer than a sliding attention window (EmbeddingGemma: 512 tokens) and than MiniLM's 256: truncation too
    "Maintenance schedule. " + "Check the belt tension, clean the fan filter and inspect the cables. " * 60,
]


def _load_st(src: Path) -> SentenceTransformer:
    try:
        import torch  # noqa: F401
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise ConvertError(f"converting an embedder needs torch and sentence-transformers; "
                           f"install them with `{INSTALL_HINT}`") from exc
    try:
        return SentenceTransformer(str(src), device="cpu", local_files_only=True).eval()
    except Exception as exc:  # a broken directory must say so, not print a traceback
        raise ConvertError(f"sentence-transformers cannot load {src}: {exc}") from exc


def agreement(model: SentenceTransformer, out: Path) -> Agreement:
    """Cosine between sentence-transformers' vectors and the ONNX directory's (through the gateway's embedder)."""
    import numpy as np

    from retrieval.embedders.onnx import OnnxEmbedder

    config = _read_table(out / CONFIG_FILE)
    prompts = _table(config["prompts"], f"{out / CONFIG_FILE}: prompts")
    query_prompt = _text(prompts["query"], "query prompt")
    document_prompt = _text(prompts["document"], "document prompt")

    def gateway_text(text: str) -> str:  # the gateway NFKC-normalises every text it embeds (full-width "？")
        return unicodedata.normalize("NFKC", text).strip()

    ref_q = model.encode([query_prompt + gateway_text(q) for q in CHECK_QUERIES], normalize_embeddings=True)
    ref_p = model.encode([document_prompt + gateway_text(p) for p in CHECK_PASSAGES], normalize_embeddings=True)
    onnx = OnnxEmbedder(f"onnx:{out}")
    got_q = np.stack([onnx.encode_query(q) for q in CHECK_QUERIES])
    got_p = onnx.encode(CHECK_PASSAGES)
    cos = np.concatenate([(ref_q * got_q).sum(axis=1), (ref_p * got_p).sum(axis=1)])
    return {"min_cosine": round(float(cos.min()), 5), "mean_cosine": round(float(cos.mean()), 5),
            "texts": int(cos.size)}


def convert(src: Path, out: Path, *, int8: bool = False) -> EmbedderRecord:
    """Convert SRC (a sentence-transformers directory) into OUT; returns the recorded config (CONFIG_FILE)."""
    src, out = Path(src).expanduser(), Path(out).expanduser()
    config = describe(src)
    if out.exists() and any(out.iterdir()):
        if not (out / CONFIG_FILE).is_file():
            raise ConvertError(f"{out} exists and is not an earlier conversion; name an empty or new directory")
    model = _load_st(src)
    dimension = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    config["dim"] = int(dimension() or 0)
    config["int8"] = int8
    config["max_seq_length"] = int(getattr(model, "max_seq_length", None) or config["max_seq_length"])
    config["tools"] = {d: importlib.metadata.version(d) for d in
                       ("torch", "transformers", "sentence-transformers", "onnx", "onnxruntime")}
    config["inputs"] = write_model(out, lambda target: export_onnx(model, target), int8=int8)
    shutil.copyfile(src / "tokenizer.json", out / "tokenizer.json")
    (out / CONFIG_FILE).write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    check = agreement(model, out)
    floor = MIN_COSINE_INT8 if int8 else MIN_COSINE_FP32
    config["check"] = {**check, "floor": floor}
    (out / CONFIG_FILE).write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if check["min_cosine"] < floor:
        raise ConvertError(f"{out}: the ONNX vectors do not reproduce sentence-transformers' (min cosine "
                           f"{check['min_cosine']} < {floor}); do not use this directory")
    return config
