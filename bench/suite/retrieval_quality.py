"""Retrieval quality on the sample question set: hit@1, hit@5 and MRR for dense, lexical, hybrid.

A hit is a passage from the gold manual on one of the gold pages. Only answerable questions
count. The index is built by the real ingest path (retrieval.versions.IndexStore) into a
temporary data directory, with the default embedding model and chunker settings.

    python -m bench.suite.retrieval_quality            # prints Markdown, writes docs/bench/retrieval_quality.md
    python -m bench.suite.retrieval_quality --sweep    # also rrf_k / candidates sensitivity
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

from bench.harness import REPO, write_section
from gateway.qa.metrics import gold_pages

SAMPLES = REPO / "sample_manuals"
MODES = ("dense", "lexical", "hybrid")


def build_sample_store(data_dir: Path, embedder: Any) -> Any:
    """Ingest the sample PDFs through the real pipeline into `data_dir`; returns the IndexStore."""
    from ingest.models import ChunkParams, ParseLimits
    from retrieval.versions import IndexStore

    store = IndexStore(data_dir)
    report = store.ingest(sorted(SAMPLES.glob("*.pdf")), embedder, ChunkParams(), ParseLimits())
    if report.failed:
        raise SystemExit(f"ingest failed: {report.failed}")
    return store


def load_questions(path: Path = SAMPLES / "questions.jsonl") -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def evaluate(store: Any, embedder: Any, questions: list[dict[str, Any]], mode: str, k: int = 5,
             candidates: int = 50, rrf_k: int = 60, vectors: dict[str, Any] | None = None
             ) -> dict[str, Any]:
    """hit@1, hit@k, MRR@k over answerable questions, plus the ids of the misses at k."""
    from retrieval.search import search
    from retrieval.types import SearchParams

    hit1 = hitk = 0
    rr = 0.0
    misses: list[str] = []
    answerable = [q for q in questions if q.get("answerable")]
    for q in answerable:
        qv = vectors[q["id"]] if vectors else None
        params = SearchParams(k=k, candidates=candidates, rrf_k=rrf_k, mode=mode)  # type: ignore[arg-type]
        hits = search(store, embedder, q["question"], params, query_vector=qv)
        gold = gold_pages(q)
        rank = next((i for i, h in enumerate(hits, start=1) if (h.manual, h.page) in gold), None)
        if rank is None:
            misses.append(q["id"])
            continue
        hit1 += rank == 1
        hitk += 1
        rr += 1.0 / rank
    n = len(answerable)
    return {"mode": mode, "n": n, "hit@1": hit1 / n, f"hit@{k}": hitk / n, "mrr": rr / n, "misses": misses}


def run(sweep: bool = False, write: bool = True) -> str:
    from retrieval.embedders import load_embedder

    embedder = load_embedder()
    questions = load_questions()
    with tempfile.TemporaryDirectory(prefix="manualqa-bench-") as tmp:
        store = build_sample_store(Path(tmp), embedder)
        version = store.open()
        vectors = {q["id"]: embedder.encode_query(q["question"]) for q in questions}
        rows = [evaluate(store, embedder, questions, mode, vectors=vectors) for mode in MODES]
        lines = [
            "## Retrieval quality (sample manuals)",
            "",
            f"{rows[0]['n']} answerable questions from `sample_manuals/questions.jsonl` over "
            f"{version.chunks.chunk_count()} chunks of {len(version.chunks.manuals())} manuals; a hit is a "
            "passage from the gold manual on a gold page. Defaults: candidates=50 per side, rrf_k=60, k=5.",
            "",
            "| mode | hit@1 | hit@5 | MRR@5 | misses at 5 |",
            "|---|---|---|---|---|",
        ]
        for r in rows:
            lines.append(f"| {r['mode']} | {r['hit@1']:.3f} | {r['hit@5']:.3f} | {r['mrr']:.3f} | "
                         f"{', '.join(r['misses']) or '-'} |")
        if sweep:
            lines += ["", "Hybrid sensitivity (hit@5 / MRR@5):", "",
                      "| rrf_k \\ candidates | 10 | 20 | 50 | 100 |", "|---|---|---|---|---|"]
            for rrf_k in (10, 30, 60, 100):
                cells = []
                for cand in (10, 20, 50, 100):
                    r = evaluate(store, embedder, questions, "hybrid", candidates=cand, rrf_k=rrf_k,
                                 vectors=vectors)
                    cells.append(f"{r['hit@5']:.3f} / {r['mrr']:.3f}")
                lines.append(f"| {rrf_k} | " + " | ".join(cells) + " |")
        version.chunks.close()
    text = "\n".join(lines)
    if write:
        write_section(__spec__.name, text)
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweep", action="store_true", help="also vary rrf_k and candidates")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    print(run(sweep=args.sweep, write=not args.no_write))


if __name__ == "__main__":
    main()
