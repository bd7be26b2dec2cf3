"""A Chinese question read in English words too (retrieval.glossary), on the development halves.

A Chinese question's own Latin words ("Agon", "USB") and CC-CEDICT's English for its Chinese words
("串口" -> "serial port") are searched lexically among the passages not in Chinese, a ranking fused at
search.glossary_weight beside the others (0: off). Measured at weights 0, 1, 3 and 6 with every answerable
question of the development halves (asked in the manual's language, in English about the foreign manuals,
and eval/dev's questions asked in Chinese and German about its English manuals: zh->en, de->en), two ways:
one gateway of every development manual (four languages, as on a site), and each half as its own gateway
(its manuals + the two sample manuals, as languages_eval builds it). Only a question detected as Chinese
gets the ranking, so only the zh and zh->en cells can move. The weight was chosen on these; the test halves
(rows "test: ") were then measured once at 0 and the chosen 3. Cells: hit@1 / hit@5 of n (k = 5; a hit is a
passage of the gold manual on a gold page).

    python -m bench.experiments.glossary     # writes docs/bench/experiments/glossary.md
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from bench import experiment_page as page

REPO = Path(__file__).resolve().parents[2]
HALVES = ["dev", "dev2", "dev3", "zh-dev", "zh-dev2", "zh-dev3", "zh-dev4", "de-dev", "de-dev2", "de-dev3", "de-dev4",
          "fr-dev", "fr-dev2"]
PER_HALF = ["dev", "zh-dev", "zh-dev2", "zh-dev3", "zh-dev4"]  # the halves with Chinese questions
# the test halves, measured once with the weight chosen above: all of them in one gateway, and those with
# Chinese questions each as its own
TEST = ["test", "zh-test", "zh-test2", "de-test", "de-test2", "fr-test"]
TEST_PER_HALF = ["test", "zh-test", "zh-test2"]
GROUPS = ("en", "zh", "de", "fr", "en->zh", "en->de", "en->fr", "zh->en", "de->en")
WEIGHTS = (0.0, 1.0, 3.0, 6.0)
Cell = list[int]  # [hit@1, hit@5, n]
CHOICE = ("Shipped: search.glossary_weight = 3. In one gateway of every development manual the questions asked in "
          "Chinese about English manuals find a gold page among the first five for 13 of 30 without it and 20 with "
          "it (first: 8 -> 11); Chinese questions about the Chinese manuals lose one first place (120 -> 119 of "
          "140); 6 finds more among five (22) and loses more (Chinese first 118, among five 139 -> 134). Where each "
          "half is its own gateway the Chinese questions are unchanged and those about the English manuals gain "
          "(first 13 -> 17, among five 23 -> 24). Still missed: questions in words the English manual says "
          "otherwise (\"焊接\" is \"weld\" to the dictionary, the manual solders) or naming a variant no dictionary "
          "reads (\"隔离版\", the isolated board). Then the test halves, once, at 0 and 3: eval/test's questions "
          "asked in Chinese, each half its own gateway, first 20 -> 37 and among five 44 -> 61 of 77; in one gateway "
          "of every test manual 4 -> 15 and 11 -> 26 of 77; Chinese questions about the Chinese test manuals 39 / 51 "
          "-> 39 / 51 of 52 (per half) and 39 / 51 -> 40 / 50 (one gateway). The same English words also name "
          "manuals (\"活塞板\" reads \"piston\"); no question here names one only in Chinese, and no cell moved.")


def _ask(gw: Any, halves: list[str], weight: float) -> dict[str, Cell]:
    from bench.suite.languages_eval import asked, gold_rank

    search = gw.settings.search
    gw.settings.search = dataclasses.replace(search, glossary_weight=weight)
    counts: dict[str, Cell] = {}
    try:
        for half in halves:
            for group, q in asked(half, REPO / "eval" / half):
                if not q["answerable"]:
                    continue
                rank = gold_rank(gw.search(q["question"], k=5), q)
                c = counts.setdefault(group, [0, 0, 0])
                c[0] += rank == 1
                c[1] += rank is not None
                c[2] += 1
    finally:
        gw.settings.search = search
    return counts


def run(halves: list[str], per_half: list[str], weights: tuple[float, ...] = WEIGHTS,
        label: str = "") -> dict[str, dict[str, dict[str, Cell]]]:
    """{setup: {"weight W": {group: cell}}}, setup "all manuals" or "per half" (prefixed by `label`)."""
    from bench.suite.languages_eval import half_gateway

    out: dict[str, dict[str, dict[str, Cell]]] = {f"{label}all manuals": {}, f"{label}per half": {}}
    if halves:
        with half_gateway(halves) as gw:
            for w in weights:
                out[f"{label}all manuals"][f"{w:g}"] = _ask(gw, halves, w)
    for half in per_half:
        with half_gateway(half) as gw:
            for w in (0.0, 3.0):
                page.add_counts(out[f"{label}per half"].setdefault(f"{w:g}", {}), _ask(gw, [half], w))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = page.parser(__doc__, HALVES)
    parser.add_argument("--per-half", nargs="*", default=PER_HALF)
    parser.add_argument("--test", nargs="*", default=TEST, help="test halves, measured at weights 0 and 3 only")
    parser.add_argument("--test-per-half", nargs="*", default=TEST_PER_HALF)
    args = parser.parse_args(argv)
    results = run(args.halves, args.per_half)
    results.update(run(args.test, args.test_per_half, (0.0, 3.0), "test: "))
    body = "\n".join(page.setup_rows(results, GROUPS, "glossary_weight"))
    page.publish(__file__, "A Chinese question read in English words too", page.intro(__doc__) + "\n\n" + body
                 + "\n\n" + CHOICE, results, write=not args.no_write)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
