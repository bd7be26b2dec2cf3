"""Retrieval and the not-found threshold on manuals nobody tuned for: eval/dev chooses, eval/test reports.

Each half is its own gateway: its manuals plus the two sample manuals as distractors, ingested by
the real path (retrieval.versions.IndexStore) into a temporary data directory. Every search
setting below is chosen on the development half only (``--sweep`` prints the grid); the test half
is then measured once with the chosen settings and once with the settings before this work, side
by side. A hit is a passage from the gold manual on a gold page; only answerable questions count
for hit@k and MRR; refusals are decided exactly as gateway.answer.pipeline decides them.

    python -m bench.suite.retrieval_eval              # dev grid + dev/test, writes docs/bench/retrieval_eval.md
    python -m bench.suite.retrieval_eval --no-sweep   # only the before/after table (the grid is the slow part)
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.harness import REPO, write_section
from gateway.qa.metrics import gold_pages

EVAL = REPO / "eval"
SAMPLES = REPO / "sample_manuals"


def recipe(max_chars: int, overlap_chars: int, context: str) -> Any:
    """What is decided when the index is built: the ingest's own chunk settings (min_chars default)."""
    from ingest.models import ChunkParams

    return ChunkParams(max_chars=max_chars, overlap_chars=overlap_chars, context=context)


@dataclass(frozen=True)
class Query:
    """What is decided at search time."""

    dense_weight: float = 1.0
    lexical_weight: float = 1.0
    rrf_k: int = 60
    page_share: float = 0.0
    candidates: int = 50
    # the passages re-ordered by their best sentence (retrieval.sentence_rank); 0 is off, as before it
    sentence_weight: float = 0.0
    sentence_pool: int = 20
    term_weight: float = 0.0  # + the share of the question's words (retrieval.term_coverage); 0 is off

    def params(self, k: int = 5) -> Any:
        """These settings as retrieval.search takes them: a SearchParams, its other fields at their defaults."""
        from retrieval.types import SearchParams

        return SearchParams(k=k, candidates=self.candidates, rrf_k=self.rrf_k, dense_weight=self.dense_weight,
                            lexical_weight=self.lexical_weight, page_share=self.page_share,
                            sentence_weight=self.sentence_weight, sentence_pool=self.sentence_pool,
                            term_weight=self.term_weight)


BEFORE = (recipe(600, 100, "heading"), Query())  # the defaults before issue 9


@dataclass
class Scores:
    n: int = 0
    hit1: float = 0.0
    hit5: float = 0.0
    mrr: float = 0.0
    misses: list[str] = field(default_factory=list)
    closest: dict[str, float] = field(default_factory=dict)  # question id -> best cosine the search saw

    def row(self) -> str:
        return f"{self.hit1:.3f} | {self.hit5:.3f} | {self.mrr:.3f}"


def load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def split_paths(split: str) -> tuple[list[Path], list[dict[str, Any]]]:
    folder = EVAL / split
    pdfs = sorted((folder / "manuals").glob("*.pdf")) + sorted(SAMPLES.glob("*.pdf"))
    return pdfs, load(folder / "questions.jsonl")


def passages(pdfs: list[Path]) -> list[str]:
    """The texts ingest embeds for these PDFs: the shipped chunker's chunks with title and heading."""
    from ingest.chunker import chunk_manual
    from ingest.models import ChunkParams, ParseLimits
    from ingest.sandbox import parse_pdf
    from retrieval.embedders import passage_text

    params, texts = ChunkParams(), []
    for pdf in pdfs:
        parsed = parse_pdf(pdf, ParseLimits(timeout_s=1200))  # a busy box parses slowly
        title = params.title_for(parsed.title)
        texts += [passage_text(c.heading, c.text, title) for c in chunk_manual(parsed, params)]
    return texts


def build(pdfs: list[Path], recipe: Any, embedder: Any, data_dir: Path) -> Any:
    from ingest.models import ParseLimits
    from retrieval.versions import IndexStore

    store = IndexStore(data_dir)
    report = store.ingest(pdfs, embedder, recipe, ParseLimits(timeout_s=1200))  # a busy box parses slowly
    if report.failed:
        raise SystemExit(f"ingest failed: {report.failed}")
    return store


def evaluate(store: Any, embedder: Any, questions: list[dict[str, Any]], query: Query,
             vectors: dict[str, Any], k: int = 5) -> tuple[Scores, dict[str, list[Any]]]:
    """Scores over answerable questions, and each question's top hits (for the refusal sweep)."""
    from retrieval.search import search_with_timings
    from retrieval.types import CLOSEST

    s = Scores()
    hits_by_id: dict[str, list[Any]] = {}
    for q in questions:
        hits, timings = search_with_timings(store, embedder, q["question"], query.params(k),
                                            query_vector=vectors[q["id"]])
        hits_by_id[q["id"]] = hits
        if CLOSEST in timings:
            s.closest[q["id"]] = timings[CLOSEST]
        if not q.get("answerable"):
            continue
        s.n += 1
        gold = gold_pages(q)
        rank = next((i for i, h in enumerate(hits, start=1) if (h.manual, h.page) in gold), None)
        if rank is None:
            s.misses.append(q["id"])
            continue
        s.hit1 += rank == 1
        s.hit5 += 1
        s.mrr += 1.0 / rank
    if s.n:
        s.hit1, s.hit5, s.mrr = s.hit1 / s.n, s.hit5 / s.n, s.mrr / s.n
    return s, hits_by_id


def refusals(questions: list[dict[str, Any]], hits_by_id: dict[str, list[Any]], threshold: float,
             closest: dict[str, float] | None = None) -> tuple[float, float]:
    """(share of unanswerable refused, share of answerable refused) at one min_similarity."""
    from gateway.answer.evidence_strength import evidence_is_strong

    def weak(q: dict[str, Any]) -> bool:
        return not evidence_is_strong(hits_by_id[q["id"]], threshold, (closest or {}).get(q["id"]))[0]

    ans = [q for q in questions if q.get("answerable")]
    un = [q for q in questions if not q.get("answerable")]
    refused_un = sum(1 for q in un if weak(q))
    refused_ans = sum(1 for q in ans if weak(q))
    return refused_un / max(1, len(un)), refused_ans / max(1, len(ans))


def choose_threshold(questions: list[dict[str, Any]], hits_by_id: dict[str, list[Any]],
                     max_false_refusals: float = 0.05, closest: dict[str, float] | None = None) -> float:
    """The highest min_similarity that refuses at most max_false_refusals of answerable questions."""
    best = 0.0
    for t in [x / 100 for x in range(20, 80)]:
        _, false_ref = refusals(questions, hits_by_id, t, closest)
        if false_ref <= max_false_refusals:
            best = t
    return best


def shipped() -> tuple[Any, Query]:
    """The defaults this gateway ships with (gateway.config), i.e. "after"."""
    from ingest.models import ChunkParams
    from retrieval.types import SearchParams

    c, s = ChunkParams(), SearchParams()
    return (recipe(c.max_chars, c.overlap_chars, c.context),
            Query(s.dense_weight, s.lexical_weight, s.rrf_k, s.page_share, s.candidates, s.sentence_weight,
                  s.sentence_pool, s.term_weight))


def grid() -> list[Query]:
    out = []
    for dw, lw, rrf_k, share in itertools.product((1.0,), (0.5, 0.75, 1.0, 1.5, 2.0), (10, 30, 60),
                                                  (0.0, 0.25, 0.5, 1.0)):
        out.append(Query(dense_weight=dw, lexical_weight=lw, rrf_k=rrf_k, page_share=share))
    return out


def run(sweep: bool, write: bool, recipes: list[Any], chosen: tuple[Any, Query] | None) -> str:
    from retrieval.embedders import load_embedder

    embedder = load_embedder()
    lines = ["## Retrieval on manuals nobody tuned for (eval/dev chooses, eval/test reports)", ""]
    dev_pdfs, dev_q = split_paths("dev")
    test_pdfs, test_q = split_paths("test")
    vec = {q["id"]: embedder.encode_query(q["question"]) for q in dev_q + test_q}
    n_ans = {name: sum(1 for q in qs if q.get("answerable")) for name, qs in (("dev", dev_q), ("test", test_q))}
    lines.append(f"Development half: {len(dev_pdfs) - 2} manuals + 2 sample manuals as distractors, "
                 f"{n_ans['dev']} answerable and {len(dev_q) - n_ans['dev']} unanswerable questions. "
                 f"Test half: {len(test_pdfs) - 2} manuals + the same distractors, {n_ans['test']} answerable "
                 f"and {len(test_q) - n_ans['test']} unanswerable. k=5; embedder {embedder.model_id}.")
    lines.append("")
    results: dict[tuple[Any, Query], Scores] = {}
    grid_lines: list[str] = []
    with tempfile.TemporaryDirectory(prefix="manualqa-eval-") as tmp:
        stores: dict[tuple[str, Any], Any] = {}

        def store_for(split: str, recipe: Any) -> Any:
            key = (split, recipe)
            if key not in stores:
                t = time.perf_counter()
                pdfs = dev_pdfs if split == "dev" else test_pdfs
                stores[key] = build(pdfs, recipe, embedder, Path(tmp) / f"{split}-{len(stores)}")
                print(f"built {split} {recipe} in {time.perf_counter() - t:.0f} s", file=sys.stderr)
            return stores[key]

        if sweep:
            grid_lines += ["### Development grid", "",
                           "| chunk chars | context | lexical weight | rrf_k | page share | hit@1 | hit@5 | MRR |",
                           "|---|---|---|---|---|---|---|---|"]
            for recipe in recipes:
                store = store_for("dev", recipe)
                for query in [BEFORE[1], *grid()]:
                    s, _ = evaluate(store, embedder, dev_q, query, vec)
                    results[(recipe, query)] = s
                    grid_lines.append(f"| {recipe.max_chars} | {recipe.context} | {query.lexical_weight} | "
                                      f"{query.rrf_k} | {query.page_share} | {s.row()} |")
            best = max(results, key=lambda key: (round(results[key].mrr, 4), results[key].hit1))
            grid_lines += ["", f"Best on dev by MRR: {best[0]} {best[1]}.", ""]
        chosen = chosen or shipped()
        lines += ["### Before and after, both halves", "",
                  "| settings | half | hit@1 | hit@5 | MRR | min_similarity (chosen on dev) | "
                  "unanswerable refused | answerable refused |",
                  "|---|---|---|---|---|---|---|---|"]
        for label, (recipe, query) in (("before", BEFORE), ("after", chosen)):
            dev_store = store_for("dev", recipe)
            s_dev, hits_dev = evaluate(dev_store, embedder, dev_q, query, vec)
            threshold = choose_threshold(dev_q, hits_dev, closest=s_dev.closest)
            s_test, hits_test = evaluate(store_for("test", recipe), embedder, test_q, query, vec)
            for half, s, hits, qs in (("dev", s_dev, hits_dev, dev_q), ("test", s_test, hits_test, test_q)):
                un, fa = refusals(qs, hits, threshold, s.closest)
                step = (f", best sentence x {query.sentence_weight} + question words x {query.term_weight} "
                        f"over the top {query.sentence_pool}" if query.sentence_weight or query.term_weight else "")
                lines.append(f"| {label}: {recipe.max_chars} chars, {recipe.context}, weights "
                             f"{query.dense_weight}/{query.lexical_weight}, rrf_k {query.rrf_k}, page share "
                             f"{query.page_share}{step} | {half} | {s.row()} | {threshold:.2f} | {un:.2f} | {fa:.2f} |")
            lines.append(f"| {label} | test misses at 5 | {', '.join(s_test.misses) or '-'} | | | | | |")
        for store in stores.values():
            store.open().chunks.close()
    lines += ["", *grid_lines]
    text = "\n".join(lines)
    if write:
        print(f"wrote {write_section(__spec__.name, text)}", file=sys.stderr)
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweep", action=argparse.BooleanOptionalAction, default=True,
                        help="the development grid (default; as published in docs/bench/retrieval_eval.md)")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    recipes = [recipe(600, 100, "heading"), recipe(600, 100, "title+heading"),
               recipe(1000, 150, "title+heading"), recipe(1500, 200, "title+heading")]
    print(run(args.sweep, not args.no_write, recipes, None))


if __name__ == "__main__":
    main()
