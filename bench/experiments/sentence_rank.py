"""Passages ranked by their best sentence as well: eval/dev + eval/dev2 choose, eval/dev3 and eval/test report.

The index embeds a chunk whole (~1,000 characters), so the one sentence that answers is averaged with
its neighbours. retrieval/sentence_rank.py re-orders the fused top `pool` by fused score / best fused
score + weight x the question's best cosine to one of the passage's sentences (title and heading
before each, as the index reads a passage), with the index's own embedder. This script measures that
on every half: each answerable question's fused top 20 is scored once, then re-ordered for every
(pool, weight); the pair with the best summed MRR on the two development halves is chosen (ties: the
smaller pool, which costs less, then the smaller weight), and eval/dev3 and eval/test are scored once
with it. Cost: the search with and without the step, interleaved question by question on eval/test,
the sentence cache emptied before each search so that every search pays the embedding.

    .venv/bin/python -m bench.experiments.sentence_rank                        # ingests the four halves
    .venv/bin/python -m bench.experiments.sentence_rank --reuse extractive-1205c   # answer_eval's gateways
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.experiments.reranker import page_hits, pct
from bench.harness import write_section
from gateway.qa.metrics import gold_pages

CHOOSE = ("dev", "dev2")
REPORT = ("dev3", "test")
POOLS = (5, 10, 20)
WEIGHTS = (0.5, 1.0, 2.0, 4.0, 8.0)
K = 5
Scored = list[tuple[list[Any], list[float], set[Any]]]


def scored(store: Any, embedder: Any, questions: list[dict[str, Any]]) -> Scored:
    """Per answerable question: its fused top 20 (no sentence step), their best-sentence cosines, its gold pages."""
    from retrieval.search import search
    from retrieval.sentence_rank import best_sentence_similarity
    from retrieval.types import SearchParams

    out = []
    for q in questions:
        if not q.get("answerable"):
            continue
        qv = embedder.encode_query(q["question"])
        hits = search(store, embedder, q["question"], SearchParams(k=max(POOLS), sentence_weight=0.0, term_weight=0.0),
                      query_vector=qv)
        sims = best_sentence_similarity(embedder, qv, [{"title": h.title, "heading": h.heading, "text": h.text}
                                                       for h in hits])
        out.append((hits, sims, gold_pages(q)))
    return out


def demoted(hits: list[Any]) -> set[int]:
    """Positions of the hits search ranks at half their score (contents pages, doubtful OCR)."""
    from retrieval.search import is_navigation
    from retrieval.types import SearchParams

    doubt = SearchParams().ocr_doubt
    return {i for i, h in enumerate(hits) if is_navigation(h.heading, h.text)
            or (h.ocr_confidence is not None and h.ocr_confidence < doubt)}


def metrics(rows: Scored, pool: int, weight: float) -> tuple[float, float, float]:
    """hit@1, hit@5, MRR@5 with the first `pool` re-ordered as retrieval.sentence_rank does (weight 0: fused order)."""
    from retrieval.sentence_rank import sentence_order

    orders = []
    for hits, sims, gold in rows:
        order = list(range(len(hits)))
        if weight > 0:
            fused = {i: h.score for i, h in enumerate(hits)}
            cos = {i: h.dense_score or 0.0 for i, h in enumerate(hits)}
            order = sentence_order(order, fused, dict(zip(order[:pool], sims[:pool], strict=True)), weight, cos,
                                   demoted(hits))
        orders.append((hits, order, gold))
    return page_hits(orders)


def latency(store: Any, embedder: Any, questions: list[dict[str, Any]], pool: int,
            weight: float) -> dict[str, list[float]]:
    """Search ms without the step, with it (the sentence vectors the index stores), and the step again
    as a version without stored vectors pays it (its sentences embedded now, the cache emptied)."""
    from retrieval.search import search_with_timings
    from retrieval.sentence_rank import VectorCache, best_sentence_similarity
    from retrieval.types import SearchParams

    out: dict[str, list[float]] = {"hybrid": [], "hybrid + sentences (stored vectors)": [],
                                   "sentence step (stored vectors)": [],
                                   "sentence step (no stored vectors: embedded per search)": []}
    for q in questions:
        _h, t0 = search_with_timings(store, embedder, q["question"],
                                     SearchParams(k=K, sentence_weight=0.0, term_weight=0.0))
        hits, t1 = search_with_timings(store, embedder, q["question"],
                                       SearchParams(k=pool, sentence_weight=weight, sentence_pool=pool))
        started = time.perf_counter()
        best_sentence_similarity(embedder, embedder.encode_query(q["question"]),
                                 [{"title": h.title, "heading": h.heading, "text": h.text} for h in hits],
                                 cache=VectorCache())  # empty: every sentence embedded now
        out["hybrid"].append(t0["total_ms"])
        out["hybrid + sentences (stored vectors)"].append(t1["total_ms"])
        out["sentence step (stored vectors)"].append(t1["sentence_ms"])
        out["sentence step (no stored vectors: embedded per search)"].append((time.perf_counter() - started) * 1000)
    return out


def ingest_seconds(pdfs: list[Path], embedder: Any, tmp: Path) -> dict[str, float]:
    """One half ingested twice, with and without the sentence vectors (the rest of the ingest the same)."""
    from bench.suite.retrieval_eval import build, shipped
    from retrieval.entries import Embedding

    out = {}
    keep = Embedding.sentences
    for name, skip in (("without sentence vectors", True), ("with sentence vectors (shipped)", False)):
        if skip:
            Embedding.sentences = lambda self, entries: None  # type: ignore[method-assign]
        try:
            started = time.perf_counter()
            build(pdfs, shipped()[0], embedder, tmp / name.split()[0])
            out[name] = time.perf_counter() - started
        finally:
            Embedding.sentences = keep  # type: ignore[method-assign]
    return out


def main(argv: list[str] | None = None) -> int:
    from bench.suite.retrieval_eval import build, shipped, split_paths
    from retrieval.embedders import load_embedder
    from retrieval.versions import IndexStore

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reuse", metavar="LABEL", help="search answer_eval's gateways of this run label "
                                                     "instead of ingesting the halves")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    embedder = load_embedder()
    rows: dict[str, Any] = {}
    questions: dict[str, list[dict[str, Any]]] = {}
    stores: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="manualqa-sentence-rank-") as tmp:
        for half in (*CHOOSE, *REPORT):
            pdfs, questions[half] = split_paths(half)
            if args.reuse:
                from bench.suite.answer_eval import data_dir

                stores[half] = IndexStore(data_dir(half, args.reuse))
            else:
                stores[half] = build(pdfs, shipped()[0], embedder, Path(tmp) / half)
            rows[half] = scored(stores[half], embedder, questions[half])
            print(half, "scored", len(rows[half]), flush=True)
        grid = {(p, w): sum(metrics(rows[h], p, w)[2] for h in CHOOSE) for p in POOLS for w in WEIGHTS}
        pool, weight = max(grid, key=lambda pw: (round(grid[pw], 6), -pw[0], -pw[1]))
        cost = latency(stores["test"], embedder, questions["test"], pool, weight)
        ingest = ingest_seconds(split_paths("dev")[0], embedder, Path(tmp) / "ingest")
    halves = (*CHOOSE, *REPORT)
    head = "| order | " + " | ".join(f"{h} hit@1 / hit@5 / MRR" for h in halves) + " |"
    lines = [head, "|---|" + "---|" * len(halves)]

    def row(name: str, p: int, w: float) -> None:
        cells = [" / ".join(f"{x:.3f}" for x in metrics(rows[h], p, w)) for h in halves]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
        print(lines[-1], flush=True)

    row("hybrid (RRF), no sentence step", pool, 0.0)
    row(f"**best sentence, pool {pool}, weight {weight} (chosen on {' + '.join(CHOOSE)})**", pool, weight)
    grid_lines = ["| pool | " + " | ".join(f"w {w}" for w in WEIGHTS) + " |", "|---|" + "---|" * len(WEIGHTS)]
    grid_lines += [f"| {p} | " + " | ".join(f"{grid[(p, w)] / len(CHOOSE):.3f}" for w in WEIGHTS) + " |" for p in POOLS]
    cost_lines = ["| | p50 ms | p95 ms |", "|---|---|---|"] + [
        f"| {name} | {pct(v, 50):.1f} | {pct(v, 95):.1f} |" for name, v in cost.items()]
    base = ingest["without sentence vectors"]
    ingest_lines = ["| eval/dev ingest | seconds | pages/s ratio to without |", "|---|---|---|"] + [
        f"| {name} | {sec:.1f} | {base / sec:.2f} |" for name, sec in ingest.items()]
    n = {h: len(rows[h]) for h in halves}
    h1, h5, mrr = metrics(rows["test"], pool, weight)
    step = pct(cost["sentence step (stored vectors)"], 50)
    ratio = ingest["without sentence vectors"] / ingest["with sentence vectors (shipped)"]
    goals = [("hit@1 >= 0.80", h1 >= 0.80, f"{h1:.3f}"), ("hit@5 >= 0.97", h5 >= 0.97, f"{h5:.3f}"),
             ("MRR >= 0.87", mrr >= 0.87, f"{mrr:.3f}"),
             ("added query cost <= 150 ms p50", step <= 150, f"{step:.1f} ms"),
             ("ingest >= 0.5x pages/s", ratio >= 0.5, f"{ratio:.2f}x")]
    verdict = "Issue 23's goals on eval/test with the chosen setting: " + "; ".join(
        f"{name}: {value}, {'met' if ok else '**not met**'}" for name, ok, value in goals) + "."
    text = "\n".join([
        "## Passages ranked by their best sentence as well (bench/experiments/sentence_rank.py)", "",
        f"Answerable questions: {', '.join(f'{h} {n[h]}' for h in halves)}; k = {K}, MRR is MRR@{K}, page-level "
        "hits; the shipped search otherwise (hybrid, RRF). Chosen on the summed MRR of "
        f"{' and '.join(CHOOSE)}; {' and '.join(REPORT)} never entered the choice. "
        + (f"Indexes: answer_eval's gateways `{args.reuse}`." if args.reuse else "Indexes built by this run."),
        "", *lines, "", verdict, "", f"Development grid (mean MRR over {' and '.join(CHOOSE)}), pools x weights:", "",
        *grid_lines, "",
        f"Cost on this machine, eval/test's {len(cost['hybrid'])} questions, interleaved. The index stores "
        "each chunk's sentence vectors (written at ingest), so the step is dot products; a version written "
        "before has them embedded at query time, one run per sentence (the int8 model quantizes per "
        "input), which the last row times with the cache emptied.", "", *cost_lines, "",
        "Ingest, side by side in this run (eval/dev's manuals and the two samples, the shipped chunking):", "",
        *ingest_lines])
    print(text)
    if not args.no_write:
        write_section(__spec__.name, text, argv=sys.argv[1:] if argv is None else argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
