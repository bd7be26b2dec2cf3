"""The sentence step for a question outside English, read by the companion (issue 47): its weight.

The search re-orders its fused top 20 by each passage's best sentence (retrieval.sentence_rank). For a
Chinese or German question the built-in MiniLM's sentence cosines say little, so that step is off for them
(gateway.index_parts.search_params_for); with the multilingual-e5 companion the question's best sentence as
e5 reads it can take its place (search.companion_sentence_weight; the sentences of the chunks not in English
are embedded by e5 at ingest). Each development half is ingested once by the real path (its manuals and the
two sample manuals, shipped settings and companion); every answerable question asked in the manual's own
language is searched (k = 5) under each weight, 0 being the search without the step. Chosen on the
development halves only; the test halves are reported by bench/suite/languages_eval.py with the choice.

    python -m bench.experiments.companion_sentence_rank   # writes docs/bench/experiments/companion_sentence_rank.md
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

from bench import experiment_page as page

REPO = Path(__file__).resolve().parents[2]
HALVES = ["zh-dev", "zh-dev2", "zh-dev3", "zh-dev4", "de-dev", "de-dev2", "de-dev3", "de-dev4"]
WEIGHTS = [0.0, 2.0, 4.0, 6.0, 10.0, 14.0, 20.0]
Counts = list[float]  # asked, hit@1, hit@5, reciprocal ranks summed
CHOICE = ("Shipped: 10. Chinese hit@1 is flat from 4 to 10 and falls beyond; German keeps rising to 10-14. "
          "Measured as these halves were built, not chosen on any test half.")


def run(halves: list[str]) -> dict[str, dict[str, Counts]]:
    """{weight: {half: [asked, hit@1, hit@5, sum of 1/rank]}} for the questions in the half's own language."""
    from bench.suite.languages_eval import gold_rank, group_of, half_gateway, questions_of

    out: dict[str, dict[str, Counts]] = {}
    for half in halves:
        lang = half.split("-")[0]
        questions = [q for q in questions_of(REPO / "eval" / half)
                     if q["answerable"] and group_of(half, q["id"]) == lang]
        with half_gateway(half) as gw:
            shipped = gw.settings.search
            try:
                for weight in WEIGHTS:
                    gw.settings.search = dataclasses.replace(shipped, companion_sentence_weight=weight)
                    c = [0.0, 0.0, 0.0, 0.0]
                    for q in questions:
                        rank = gold_rank(gw.search(q["question"], k=5), q)
                        c[0] += 1
                        c[1] += rank == 1
                        c[2] += rank is not None
                        c[3] += 1 / rank if rank else 0.0
                    out.setdefault(f"{weight:g}", {})[half] = c
            finally:
                gw.settings.search = shipped
        print(f"done {half}", file=sys.stderr, flush=True)
    return out


def table(results: dict[str, dict[str, Counts]]) -> str:
    halves = list(next(iter(results.values())))
    rows = ["| weight | " + " | ".join(halves) + " | Chinese | German |", "|---" * (len(halves) + 3) + "|"]
    for weight, by_half in results.items():
        cells = [f"{int(c[1])}/{int(c[2])}/{int(c[0])}" for c in by_half.values()]
        for lang in ("zh", "de"):
            t = [sum(c[i] for h, c in by_half.items() if h.startswith(lang)) for i in range(4)]
            cells.append(f"{int(t[1])}/{int(t[2])}/{int(t[0])} (MRR {t[3] / t[0]:.3f})" if t[0] else "-")
        rows.append(f"| {weight} | " + " | ".join(cells) + " |")
    return "Cells: hit@1 / hit@5 / questions.\n\n" + "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    args = page.parser(__doc__, HALVES).parse_args(argv)
    results = run(args.halves)
    page.publish(__file__, "The companion's sentence step for questions outside English",
                 page.intro(__doc__) + "\n\n" + table(results) + "\n\n" + CHOICE, results, write=not args.no_write)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
