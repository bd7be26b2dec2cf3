"""The question's words in the passage's best sentence: eval/dev + eval/dev2 choose, eval/dev3 and eval/test report.

The shipped order (retrieval.sentence_rank) adds the question's best cosine to one sentence of the
passage. A cosine rewards a sentence about the same topic; it does not see whether the rare words of
the question (a part name, a setting, a symptom) are in that sentence. This measures one more term:
the IDF-weighted share of the question's content words found in the passage's best-covering
sentence (title and heading counted with each sentence, as the index reads a passage), and the same
share over the whole passage, added with weight `v` on top of the shipped key. Words are compared
lower-cased with a light suffix strip (plural, -ing, -ed); IDF is over the index's chunks.

Every (feature, v) is scored on the summed MRR of the two development halves; the best is then scored
once on eval/dev3 and eval/test. Nothing ships unless it wins there and the report halves agree.

    .venv/bin/python -m bench.experiments.sentence_terms --data /tmp/srk   # builds the halves once, reuses them
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from bench.experiments.reranker import page_hits, pct
from bench.experiments.sentence_rank import demoted
from bench.harness import write_section
from gateway.qa.metrics import gold_pages

CHOOSE = ("dev", "dev2")
REPORT = ("dev3", "test")
VS = (0.0, 0.25, 0.5, 1.0, 2.0, 3.0, 4.0, 6.0)
SHIPPED = "passage (retrieval.term_coverage)"
FEATURES = ("sentence", "passage", "sentence, unweighted", SHIPPED)
POOL, K = 20, 5
JOINT_WEIGHTS = (0.0, 1.0, 2.0, 4.0, 6.0, 8.0)
_WORD = re.compile(r"[^\W_]+")


def stem(word: str) -> str:
    w = word.lower()
    for suffix, repl in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if len(w) > len(suffix) + 3 and w.endswith(suffix):
            return w[: -len(suffix)] + repl
    return w


def terms(text: str) -> set[str]:
    from retrieval.fts import STOPWORDS, normalize

    return {stem(t) for t in _WORD.findall(normalize(text)) if t.lower() not in STOPWORDS}


def idf_table(store: Any) -> tuple[Counter[str], int]:
    ver = store.open()
    rows = ver.chunks.get_rows([r for (r,) in ver.chunks._query("SELECT row FROM chunks")])
    df: Counter[str] = Counter()
    for r in rows:
        df.update(terms(f"{r.get('title') or ''} {r.get('heading') or ''} {r['text']}"))
    return df, len(rows)


def coverage(question: str, hit: Any, df: Counter[str], n: int) -> tuple[float, float, float]:
    """(best sentence's, whole passage's) IDF-weighted share of the question's words, and the best
    sentence's plain share."""
    from retrieval.sentence_rank import sentence_texts

    q = terms(question)
    if not q:
        return 0.0, 0.0, 0.0
    w = {t: math.log(1 + n / (1 + df.get(t, 0))) for t in q}
    total = sum(w.values())
    sentences = [terms(s) for s in sentence_texts(hit.title or "", hit.heading or "", hit.text)]
    best = max((sum(w[t] for t in q & s) for s in sentences), default=0.0)
    whole = terms(f"{hit.title or ''} {hit.heading or ''} {hit.text}")
    flat = max((len(q & s) for s in sentences), default=0) / len(q)
    return best / total, sum(w[t] for t in q & whole) / total, flat


def scored(store: Any, embedder: Any, questions: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    from retrieval.search import search
    from retrieval.sentence_rank import best_sentence_similarity
    from retrieval.term_coverage import term_coverage
    from retrieval.types import SearchParams

    df, n = idf_table(store)
    chunks = store.open().chunks
    out = []
    for q in questions:
        if not q.get("answerable"):
            continue
        qv = embedder.encode_query(q["question"])
        hits = search(store, embedder, q["question"], SearchParams(k=POOL, sentence_weight=0.0, term_weight=0.0),
                      query_vector=qv)
        sims = best_sentence_similarity(embedder, qv, [{"title": h.title, "heading": h.heading, "text": h.text}
                                                       for h in hits])
        shipped = term_coverage(q["question"], [{"title": h.title, "heading": h.heading, "text": h.text}
                                                 for h in hits], chunks.term_doc_freqs, chunks.row_total())
        covs = [(*coverage(q["question"], h, df, n), share) for h, share in zip(hits, shipped, strict=True)]
        out.append((hits, sims, covs, gold_pages(q)))
    return out


def metrics(rows: list[tuple[Any, ...]], feature: str, v: float,
            weight: float | None = None) -> tuple[float, float, float]:
    """The shipped key (fused / top + 4.0 x best-sentence cosine, demoted rows halved) + v x coverage
    (weight: another best-sentence weight than the shipped one)."""
    from retrieval.types import SearchParams

    weight = SearchParams().sentence_weight if weight is None else weight
    col = FEATURES.index(feature)
    orders = []
    for hits, sims, covs, gold in rows:
        down = demoted(hits)
        top = max(h.score for h in hits) or 1.0
        key = {i: h.score / top + (weight * sims[i] + v * covs[i][col]) * (0.5 if i in down else 1.0)
               for i, h in enumerate(hits)}
        order = sorted(key, key=lambda i: (-key[i], -(hits[i].dense_score or 0.0), i))
        orders.append((hits, order, gold))
    return page_hits(orders)


def latency(store: Any, embedder: Any, questions: list[dict[str, Any]], v: float) -> dict[str, list[float]]:
    """Search ms without and with the word share, interleaved question by question (2 rounds)."""
    from retrieval.search import search_with_timings
    from retrieval.types import SearchParams

    out: dict[str, list[float]] = {"search, sentence step without the share": [],
                                   f"search, sentence step + {v} x the share": [],
                                   "sentence step without the share": [], "sentence step with the share": []}
    for _ in range(2):
        for q in questions:
            _h, t0 = search_with_timings(store, embedder, q["question"], SearchParams(k=K, term_weight=0.0))
            _h, t1 = search_with_timings(store, embedder, q["question"], SearchParams(k=K, term_weight=v))
            out["search, sentence step without the share"].append(t0["total_ms"])
            out[f"search, sentence step + {v} x the share"].append(t1["total_ms"])
            out["sentence step without the share"].append(t0["sentence_ms"])
            out["sentence step with the share"].append(t1["sentence_ms"])
    return out


def at_scale(chunks: int = 100_000) -> list[str]:
    """The share's own cost over 20 passages on a synthetic index of `chunks` chunks (bench.suite.search_latency's
    corpus), the document-frequency cache cold (each question's first search) and warm."""
    import statistics
    import tempfile
    import time

    from bench.suite.retrieval_quality import load_questions
    from bench.suite.search_latency import build_synthetic
    from retrieval.chunkstore import ChunkStore
    from retrieval.term_coverage import term_coverage

    questions = [q["question"] for q in load_questions()]
    lines = ["| synthetic index | df cache | p50 ms | p95 ms | max ms |", "|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory(prefix="manualqa-terms-") as tmp:
        for vocabulary in ("per-manual", "shared"):
            folder = Path(tmp) / vocabulary
            folder.mkdir()
            build_synthetic(folder, chunks, 384, vocabulary=vocabulary, vectors=False)
            store = ChunkStore(folder / "chunks.db", readonly=True)
            passages = store.get_rows(list(range(POOL)))
            for cache in ("cold", "warm"):
                ms = []
                for q in questions:
                    started = time.perf_counter()
                    term_coverage(q, passages, store.term_doc_freqs, store.row_total())
                    ms.append((time.perf_counter() - started) * 1000)
                ms.sort()
                lines.append(f"| {chunks // 1000}k chunks, {vocabulary} vocabulary | {cache} | "
                             f"{statistics.median(ms):.1f} | {pct(ms, 95):.1f} | {ms[-1]:.1f} |")
            store.close()
    return lines


def main(argv: list[str] | None = None) -> int:
    from bench.suite.retrieval_eval import build, shipped, split_paths
    from retrieval.embedders import load_embedder
    from retrieval.versions import IndexStore

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, required=True, help="where the halves' gateways are built (kept, reused)")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    embedder = load_embedder()
    rows, stores, asked = {}, {}, {}
    for half in (*CHOOSE, *REPORT):
        pdfs, asked[half] = split_paths(half)
        folder = args.data / half
        store = IndexStore(folder) if (folder / "ACTIVE").exists() else build(pdfs, shipped()[0], embedder, folder)
        stores[half] = store
        rows[half] = scored(store, embedder, asked[half])
        print(half, "scored", len(rows[half]), flush=True)
    grid = {(f, v): sum(metrics(rows[h], f, v)[2] for h in CHOOSE) for f in FEATURES for v in VS}
    # what ships is retrieval.term_coverage (its weights from the index's own FTS5 counts); the other
    # rows are the variants it was chosen beside
    feature = SHIPPED
    v = max(VS, key=lambda x: (round(grid[(feature, x)], 6), -x))
    halves = (*CHOOSE, *REPORT)
    lines = ["| order | " + " | ".join(f"{h} hit@1 / hit@5 / MRR" for h in halves) + " |",
             "|---|" + "---|" * len(halves)]
    for name, f, w in (("before: fused + 4.0 x best-sentence cosine", feature, 0.0),
                       (f"**+ {v} x {feature} coverage (chosen on {' + '.join(CHOOSE)})**", feature, v)):
        lines.append(f"| {name} | " + " | ".join(" / ".join(f"{x:.3f}" for x in metrics(rows[h], f, w))
                                                 for h in halves) + " |")
    grid_lines = ["| feature | " + " | ".join(f"v {x}" for x in VS) + " |", "|---|" + "---|" * len(VS)]
    grid_lines += [f"| {f} | " + " | ".join(f"{grid[(f, x)] / len(CHOOSE):.3f}" for x in VS) + " |" for f in FEATURES]
    n = {h: len(rows[h]) for h in halves}
    joint = {(w, x): sum(metrics(rows[h], feature, x, w)[2] for h in CHOOSE) / len(CHOOSE)
             for w in JOINT_WEIGHTS for x in VS}
    joint_lines = ["| sentence weight | " + " | ".join(f"v {x}" for x in VS) + " |", "|---|" + "---|" * len(VS)]
    joint_lines += [f"| {w} | " + " | ".join(f"{joint[(w, x)]:.3f}" for x in VS) + " |" for w in JOINT_WEIGHTS]
    best_pair = max(joint, key=lambda wx: (round(joint[wx], 6), -wx[0], -wx[1]))
    cost = latency(stores["test"], embedder, asked["test"], v)
    cost_lines = ["| | p50 ms | p95 ms |", "|---|---|---|"] + [
        f"| {name} | {pct(x, 50):.1f} | {pct(x, 95):.1f} |" for name, x in cost.items()]
    h1, h5, mrr = metrics(rows["test"], feature, v)
    added = pct(cost["sentence step with the share"], 50) - pct(cost["sentence step without the share"], 50)
    before = {h: metrics(rows[h], feature, 0.0)[2] for h in REPORT}
    after = {h: metrics(rows[h], feature, v)[2] for h in REPORT}
    agree = all(after[h] > before[h] for h in REPORT)
    verdict = (f"Verdict: chosen on the development halves, {v} x the share {'moves' if agree else 'does not move'} "
               f"MRR up on both report halves ({', '.join(f'{h} {before[h]:.3f} -> {after[h]:.3f}' for h in REPORT)})"
               f": {'it ships (search.term_weight = ' + str(v) + ')' if agree else 'it does not ship'}. Added query "
               f"cost {added:.1f} ms p50; ingest unchanged (counts come from the FTS5 index at query time). "
               f"Issue 23's goals on eval/test: hit@1 >= 0.80: {h1:.3f}, {'met' if h1 >= 0.80 else '**not met**'}; "
               f"hit@5 >= 0.97: {h5:.3f}, {'met' if h5 >= 0.97 else '**not met**'}; MRR >= 0.87: {mrr:.3f}, "
               f"{'met' if mrr >= 0.87 else '**not met**'}.")
    text = "\n".join([
        "## The question's words in the best sentence (bench/experiments/sentence_terms.py)", "",
        f"Answerable questions: {', '.join(f'{h} {n[h]}' for h in halves)}; k = {K}, MRR is MRR@{K}, page-level "
        f"hits, the fused top {POOL} re-ordered. Chosen on the summed MRR of {' and '.join(CHOOSE)}; "
        f"{' and '.join(REPORT)} never entered the choice. Indexes built by this script with the shipped "
        "ingest (OCR on); the before row is the search shipped before this step.", "", *lines, "", verdict, "",
        f"Development grid (mean MRR over {' and '.join(CHOOSE)}). What ships is the last row: document "
        "frequencies counted by the index's FTS5 table (porter-stemmed heading + text); the \"passage\" row "
        "counts them over title + heading + text with the share's own light stemming, \"sentence\" takes the "
        "best-covering sentence instead of the whole passage:", "", *grid_lines, "",
        "The best-sentence weight chosen again with the share, on the same halves (mean MRR, the shipped "
        f"share); the best pair is sentence weight {best_pair[0]}, v {best_pair[1]}:", "", *joint_lines, "",
        f"Cost on this machine, eval/test's {len(asked['test'])} questions x 2, interleaved:", "", *cost_lines, "",
        "The share's own cost at scale: its 20 passages on a synthetic index of 100,000 chunks "
        "(bench/suite/search_latency.py's corpus; \"shared\" is its worst case, every word type in every "
        "manual), the sample questions; a word's count is cached per index version, so a running gateway "
        "pays the cold figure once per new word:", "", *at_scale(), "",
        "Notes. The grid first stopped at v 2.0; its best was on that edge, so it was extended to 6.0 and the "
        "same rule (the best summed development MRR) chose again. The light stemming was corrected once "
        "(\"cables\" had lost its e; \"settings\" and \"setting\" differed) before the last run; the choice "
        "did not move. The before row scores 0.727 / 0.974 / 0.833 on eval/test here, against 0.753 / 0.987 / "
        "0.855 in sentence_rank.md: those indexes were built by another run at an earlier commit on another "
        "machine (AMD EPYC, AVX2 without VNNI); the int8 embedder's kernels differ by CPU, a likely cause that "
        "was not verified. Compare rows of one run only."])
    print(text)
    if not args.no_write:
        write_section(__spec__.name, text, argv=sys.argv[1:] if argv is None else argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
