"""Training lists for the reranker: each synthetic question, its passage, and hard negatives.

The training corpus is ingested with the gateway's own IndexStore (shipped embedder and chunk
settings) into a scratch folder, and every synthetic question is searched there with the shipped
hybrid search. That gives the two things the reranker must learn from:
- consistency filtering (InPars): a question whose own passage is not among the top candidates
  is too vague or wrong to teach anything, and is dropped;
- hard negatives: the other candidates, i.e. exactly the passages the reranker will have to put
  below the right one at query time. Candidates on the positive's page are left out (the gateway
  scores pages, and a neighbouring chunk of the same page often answers too).

    .venv/bin/python -m train.rerank_data --passages /tmp/train/passages.jsonl \\
        --questions train/data/questions.jsonl --index /tmp/train/index --out /tmp/train/lists.jsonl
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from retrieval.rerank import passage_for_rerank
from train.check_corpus import corpus_dir

POOL = 30
NEGATIVES = 15
# Questions that name nothing the passage says: the teacher's habit on short or title-like passages.
_GENERIC_RE = re.compile(r"\b(name|title|category|purpose|topic) of (the|this) (manual|document|guide|device|page)\b"
                         r"|^what is (the|this) (manual|document|guide)\b"
                         r"|^what is the name of the device\??$"
                         r"|\b(them|they|these|this file)\b\??$", re.I)


def load_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def rerank_text(title: str, heading: str, text: str) -> str:
    """A passage as the reranker reads it (train.finetune_embedder passes the embedder's form instead)."""
    return passage_for_rerank(title, heading, text)


def build_store(index: Path, corpus: Path) -> Any:
    from ingest.models import ChunkParams, ParseLimits
    from retrieval.embedders import load_embedder
    from retrieval.versions import IndexStore

    embedder = load_embedder()
    store = IndexStore(index)
    if store.active_id() is None:
        pdfs = sorted(corpus.glob("*.pdf"))
        report = store.ingest(pdfs, embedder, ChunkParams(), ParseLimits(timeout_s=1200))
        if report.failed:
            print(f"not ingested: {report.failed}")
    return store, embedder


def lists(store: Any, embedder: Any, passages: dict[str, dict[str, Any]], questions: list[dict[str, Any]],
          text: Callable[[str, str, str], str] = rerank_text) -> tuple[list[dict[str, Any]], dict[str, int]]:
    from retrieval.search import search
    from retrieval.types import SearchParams

    params = SearchParams(k=POOL)
    out, counts = [], {"questions": 0, "generic": 0, "not_retrieved": 0, "kept": 0}
    for row in questions:
        p = passages.get(row["passage"])
        if p is None or p["text_sha"] != row["text_sha"]:
            continue  # the passage changed since the question was written
        for q in row["questions"]:
            counts["questions"] += 1
            if _GENERIC_RE.search(q):
                counts["generic"] += 1
                continue
            hits = search(store, embedder, q, params)
            pos_rank = next((i for i, h in enumerate(hits, 1) if h.chunk_id == p["chunk_id"]), None)
            if pos_rank is None:
                counts["not_retrieved"] += 1
                continue
            negatives = [text(h.title, h.heading, h.text) for h in hits
                         if not (h.manual_sha256 == p["manual"] and h.page == p["page"])][:NEGATIVES]
            if not negatives:
                continue
            positive = text(p["title"], p["heading"], p["text"])
            out.append({"question": q, "positive": positive, "negatives": negatives, "pos_rank": pos_rank,
                        "manual": p["manual"]})
            counts["kept"] += 1
    return out, counts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--passages", type=Path, required=True)
    ap.add_argument("--questions", type=Path, required=True)
    ap.add_argument("--index", type=Path, required=True)
    ap.add_argument("--corpus", type=Path, default=None)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    store, embedder = build_store(args.index, args.corpus or corpus_dir())
    passages = {p["id"]: p for p in load_jsonl(args.passages)}
    write(lists(store, embedder, passages, load_jsonl(args.questions)), args.out)
    return 0


def write(made: tuple[list[dict[str, Any]], dict[str, int]], out: Path) -> None:
    rows, counts = made
    with out.open("w") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    first = sum(1 for r in rows if r["pos_rank"] == 1)
    print(json.dumps(counts), f"positive first for {first}/{len(rows)}", f"-> {out}")


if __name__ == "__main__":
    raise SystemExit(main())
