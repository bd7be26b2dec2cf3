"""The word share outside English read with the question language's own stemmer (issue 47/48): in the answer's
not-found check only, or in the ranking too. Chosen on the development halves only (zh-dev, zh-dev2, de-dev,
de-dev2); the test halves are reported by bench/suite/languages_eval.py once, with the shipped choice.

Outside English the not-found check lets the share of the question's words the passages hold decide
(gateway.answer.evidence_strength). Those words were compared after a light English strip (plural -s, -ing,
-ed) in every language, so a German "Lötspitzen" did not hold "Lötspitze". Each half is ingested once; every
question is searched (k = 5) and answered (extractive) with each variant. Counted per group: hit@1, answerable
refused, answerable whose quoted evidence holds the gold evidence (as languages_eval reads it), unanswerable
refused.

    python -m bench.experiments.own_stemmer_share     # writes docs/bench/experiments/own_stemmer_share.md
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import experiment_page as page

REPO = Path(__file__).resolve().parents[2]
HALVES = ["zh-dev", "zh-dev2", "de-dev", "de-dev2"]
VARIANTS = ["light strip (before)", "own stemmer in the check (shipped)", "own stemmer in ranking and check"]
Counts = dict[str, int]
CHOICE = ("Shipped: the own stemmer in the check only (retrieval.term_coverage.own_language_coverage): 2 fewer "
          "answerable German questions refused, one more gold evidence, nothing else moved; in the ranking too it "
          "lost 3 of 67 German first places. Chinese and English questions are untouched by construction (their "
          "stemmer is the light strip).")


def _patch(variant: str, search_module: Any, shipped: dict[str, Callable[..., Any]]) -> None:
    """Point retrieval.search's two share functions at what `variant` reads."""
    from ingest.text.languages import detect_question
    from retrieval.term_coverage import own_stemmer

    setattr(search_module, "own_language_coverage", shipped["own"])  # noqa: B010 - names mypy sees unexported
    setattr(search_module, "term_coverage", shipped["terms"])  # noqa: B010
    if variant == VARIANTS[0]:
        setattr(search_module, "own_language_coverage", lambda *_args: None)  # noqa: B010
    elif variant == VARIANTS[2]:
        def ranked(query: str, rows: Any, doc_freqs: Any, total: int, *_rest: Any) -> list[float]:
            return list(shipped["terms"](query, rows, doc_freqs, total, own_stemmer(detect_question(query))))

        setattr(search_module, "term_coverage", ranked)  # noqa: B010


def run(halves: list[str]) -> dict[str, dict[str, dict[str, Counts]]]:
    """{variant: {half: {group: counts}}}"""
    import retrieval.search as search_module
    from bench.suite.languages_eval import _answer as answer_outcome
    from bench.suite.languages_eval import gold_rank, group_of, half_gateway, questions_of

    shipped = {"own": getattr(search_module, "own_language_coverage"),  # noqa: B009
               "terms": getattr(search_module, "term_coverage")}  # noqa: B009
    out: dict[str, dict[str, dict[str, Counts]]] = {}
    for half in halves:
        folder = REPO / "eval" / half
        with half_gateway(half) as gw:
            try:
                for variant in VARIANTS:
                    _patch(variant, search_module, shipped)
                    groups: dict[str, Counts] = {}
                    for q in questions_of(folder):
                        g = groups.setdefault(group_of(half, q["id"]), dict.fromkeys(
                            ("asked", "hit1", "evidence", "refused", "unanswerable", "unanswerable_refused"), 0))
                        if q["answerable"]:
                            g["hit1"] += gold_rank(gw.search(q["question"], k=5), q) == 1
                        answer_outcome(gw, q, g)  # as languages_eval counts it
                    out.setdefault(variant, {})[half] = groups
            finally:
                _patch("", search_module, shipped)
    return out


def table(results: dict[str, dict[str, dict[str, Counts]]]) -> str:
    groups = sorted({(h, g) for by_half in results.values() for h, gs in by_half.items() for g in gs})
    rows = ["| variant | half | asked in | hit@1 | answerable refused | gold evidence | unanswerable refused |",
            "|---|---|---|---|---|---|---|"]
    for variant, by_half in results.items():
        total = dict.fromkeys(("asked", "hit1", "evidence", "refused", "unanswerable", "unanswerable_refused"), 0)
        for h, g in groups:
            c = by_half.get(h, {}).get(g)
            if c is None:
                continue
            for key in total:
                total[key] += c.get(key, 0)
            rows.append(f"| {variant} | {h} | {g} | {c['hit1']}/{c['asked']} | {c['refused']}/{c['asked']} | "
                        f"{c['evidence']}/{c['asked']} | {c['unanswerable_refused']}/{c['unanswerable']} |")
        t = total
        rows.append(f"| **{variant}** | all | all | {t['hit1']}/{t['asked']} | {t['refused']}/{t['asked']} | "
                    f"{t['evidence']}/{t['asked']} | {t['unanswerable_refused']}/{t['unanswerable']} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    args = page.parser(__doc__, HALVES).parse_args(argv)
    results = run(args.halves)
    page.publish(__file__, "The word share outside English read with the language's own stemmer",
                 page.intro(__doc__) + "\n\n" + table(results) + "\n\n" + CHOICE, results, write=not args.no_write)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
