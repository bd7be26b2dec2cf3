"""How many of a capable model's drafts are right at all: the ceiling no support check can lift.

Issue 25 asks the support check to show >= 60 % of answerable questions green at >= 0.95 precision
with the Qwen2.5-Coder-1.5B instrument. A check can only pass or hold back what the model wrote, so
the share of drafts that are right bounds the green rate at that precision. Every draft of run
qwen1.5b:whole-1204 (both halves, answerable questions; and of a run on eval/dev2, the second
development set) was read by hand against the gold answer
(bench/experiments/draft_labels.json, outcome unseen); this script joins those labels with the
outcome this checkout decides for the same drafts (bench.suite.model_answers.recheck) and with
whether a gold page was among the passages the model read.

    .venv/bin/python -m bench.experiments.draft_ceiling [--no-write]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from bench.harness import write_section
from bench.suite.model_answers import recheck

LABELS = Path(__file__).with_name("draft_labels.json")
KINDS = ("right", "partial", "wrong", "refusal")
OUTCOMES = ("answered", "evidence_only", "not_found")


def _why(result: dict[str, Any]) -> str:
    """The main reason a draft was held back: an outcome rule's flag, else its sentences' commonest reason."""
    for flag in result.get("flags") or []:
        name = flag.split(":")[0]
        if name in ("answer_off_question", "yes_contradicted", "model_declined", "mostly_unsupported"):
            return str(name)
    reasons = Counter(c.get("reason") or "" for c in result.get("support") or [] if c.get("reason"))
    return str(reasons.most_common(1)[0][0]) if reasons else "other"


def measure(split: str, run: str, labels: dict[str, dict[str, str]]) -> dict[str, Any]:
    cells: Counter[tuple[str, str]] = Counter()
    gold_read: Counter[str] = Counter()
    held_back: Counter[str] = Counter()  # why a right draft was not shown green
    for it in recheck(split, run):
        q, r = it["question"], it["result"]
        if not q.get("answerable"):
            continue
        kind = labels[q["id"]]["label"]
        cells[(kind, r["outcome"])] += 1
        gold = {(q["manual"], p) for p in q.get("pages") or []}
        read = [(p["manual"], p["page"]) for p in r.get("passages") or [] if p.get("given")]
        gold_read[kind] += any(x in gold for x in read)
        if kind == "right" and r["outcome"] != "answered":
            held_back[_why(r)] += 1
    n = sum(cells.values())
    right = sum(v for (k, _), v in cells.items() if k == "right")
    green = sum(v for (_, o), v in cells.items() if o == "answered")
    green_right = cells[("right", "answered")]
    return {"split": split, "n": n, "cells": {f"{k}|{o}": v for (k, o), v in cells.items()},
            "gold_read": dict(gold_read), "held_back": dict(held_back), "right": right, "green": green,
            "green_right": green_right, "ceiling": right / n if n else 0.0, "green_rate": green / n if n else 0.0,
            "precision": green_right / green if green else 0.0,
            "check_recall": green_right / right if right else 0.0}


HEADER = ("| half | drafts | right | partial | wrong | refusal | gold page read: right / wrong drafts "
          "| ceiling (right / answerable) | green | green: right / partial / wrong "
          "| precision (right among green) | right drafts shown green |")


def _row(r: dict[str, Any]) -> str:
    by = {k: sum(v for key, v in r["cells"].items() if key.startswith(k + "|")) for k in KINDS}
    g = " / ".join(str(r["cells"].get(f"{k}|answered", 0)) for k in ("right", "partial", "wrong"))
    read = f"{r['gold_read'].get('right', 0)} of {by['right']} / {r['gold_read'].get('wrong', 0)} of {by['wrong']}"
    return (f"| {r['split']} | {r['n']} | {by['right']} | {by['partial']} | {by['wrong']} | {by['refusal']} "
            f"| {read} | {r['ceiling']:.2f} | {r['green']} ({r['green_rate']:.2f}) | {g} | {r['precision']:.2f} "
            f"| {r['green_right']} of {r['right']} ({r['check_recall']:.2f}) |")


def render(rows: list[dict[str, Any]], runs: dict[str, str]) -> str:
    out = ["## How many drafts are right at all (bench/experiments/draft_ceiling.py)", "",
           "Every draft of the 1.5B instrument on the answerable questions of each half ("
           + ", ".join(f"{split}: run `{run}`" for split, run in runs.items())
           + "), read by hand against the "
           "gold answer without seeing the outcome (bench/experiments/draft_labels.json: right, partial, wrong, "
           "refusal), beside the outcome this checkout decides for the same draft. A support check can only pass "
           "or hold back what the model wrote: at a precision near 1 the green rate cannot exceed the share of "
           "right drafts.", "", HEADER, "|---" * 12 + "|"]
    out += [_row(r) for r in rows]
    out += ["", "Outcome by label (this checkout's decision of the same drafts):", "",
            "| half | label | " + " | ".join(OUTCOMES) + " |", "|---|---|" + "---|" * len(OUTCOMES)]
    for r in rows:
        for k in KINDS:
            counts = " | ".join(str(r["cells"].get(f"{k}|{o}", 0)) for o in OUTCOMES)
            out.append(f"| {r['split']} | {k} | {counts} |")
    out += ["", "Why the right drafts not shown green were held back (a sentence's support reason: number, code, "
            "subject: the cited passage lacks the value or name or binds it to something else; overlap: too few of "
            "the claim's words; echo: repeats the question; or an outcome rule):", ""]
    for r in rows:
        ranked = sorted(r["held_back"].items(), key=lambda kv: (-kv[1], kv[0]))
        out.append(f"- {r['split']}: " + ", ".join(f"{k} {v}" for k, v in ranked))
    dev, test = rows[0], rows[1]
    out += ["", f"Reading: the 1.5B writes a right draft for {dev['ceiling']:.0%} of eval/dev's answerable "
            f"questions and {test['ceiling']:.0%} of eval/test's. Issue 25's goal of >= 60 % green at >= 0.95 "
            "precision is therefore out of reach of any support check with this instrument; what a check can still "
            "win is the right drafts it holds back (on eval/dev most of those turned away for a number or a code "
            "cite a passage other than the one that states it: docs/bench/model_answers.md's `+recite` rows show "
            "what re-citing them costs with weaker models). The gold page was among the passages read for nearly "
            "every right draft and for most wrong ones: what limits the wrong drafts is the model's reading, not "
            "retrieval."]
    for r in rows[2:]:
        out.append(f"\nOn eval/{r['split']}, manuals no choice was made on, it writes a right draft for "
                   f"{r['ceiling']:.0%} of the answerable questions ({r['right']} of {r['n']}).")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-write", action="store_true", help="print the section instead of writing it")
    args = ap.parse_args(argv)
    data = json.loads(LABELS.read_text(encoding="utf-8"))
    rows = [measure(split, run, data["labels"][split]) for split, run in data["runs"].items()]
    text = render(rows, data["runs"])
    if args.no_write:
        print(text)
    else:
        print(write_section(__spec__.name, text + "\n"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
