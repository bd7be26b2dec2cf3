"""Rebuild the built-in reranker, retrieval/models/rerank_minilm_int8/, from the kept data set.

Steps (each one a module of train/ that can also run alone):
1. passages: the training corpus (train/corpus/README.md; the PDFs are looked up as
   train/check_corpus.py says: MANUALQA_TRAIN_CORPUS, ../shared/train_corpus, train/corpus/manuals)
   parsed and chunked by the gateway's own ingest;
2. (optional, --teacher MODEL.gguf) synthetic questions by the teacher, appended to the data set;
   without it the kept train/data/questions.jsonl is used as is, which is what makes a rebuild
   reproduce the shipped file;
3. training lists: consistency filter + hard negatives from the shipped hybrid search;
4. training (torch, CPU, fixed seed and thread count);
5. export to int8 ONNX, config.json and PROVENANCE.md.

    pip install --target /tmp/onnxpkg onnx      # export needs `onnx`; manualqa does not
    PYTHONPATH=/tmp/onnxpkg .venv/bin/python -m train.make_reranker [--work /tmp/train] [--out DIR]
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from train import export_reranker, passages, rerank_data, synth_questions, train_reranker
from train.check_corpus import corpus_dir

REPO = Path(__file__).resolve().parents[1]
QUESTIONS = REPO / "train" / "data" / "questions.jsonl"
DEFAULT_OUT = REPO / "retrieval" / "models" / "rerank_minilm_int8"
# The shipped model's hyper-parameters. One epoch (2,096 steps, about 40 minutes on the 2-core
# build machine) rather than two: the time the build had, not a dev-split choice; pool and
# weight are chosen on eval/dev by bench/experiments/reranker.py (docs/bench/experiments/reranker.md).
HYPER = ["--layers", "4", "--max-length", "192", "--group", "8", "--epochs", "1", "--lr", "5e-5",
         "--seed", "23", "--threads", "2"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, default=Path("/tmp/manualqa-train"))
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--questions", type=Path, default=QUESTIONS)
    ap.add_argument("--teacher", type=Path, default=None, help="write missing questions with this GGUF first")
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    corpus = corpus_dir()
    if corpus is None:
        raise SystemExit("the training corpus is not on this machine: see train/corpus/README.md")
    work = args.work
    work.mkdir(parents=True, exist_ok=True)
    passages.main(["--corpus", str(corpus), "--out", str(work / "passages.jsonl")])
    if args.teacher:
        synth_questions.main(["--passages", str(work / "passages.jsonl"), "--model", str(args.teacher),
                              "--out", str(args.questions)])
    rerank_data.main(["--passages", str(work / "passages.jsonl"), "--questions", str(args.questions),
                      "--index", str(work / "index"), "--corpus", str(corpus), "--out", str(work / "lists.jsonl")])
    train_reranker.main(["--lists", str(work / "lists.jsonl"), "--out", str(work / "run"), *HYPER])
    export_reranker.main(["--run", str(work / "run"), "--out", str(args.out), "--questions", str(args.questions)])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
