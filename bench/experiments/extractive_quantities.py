"""Does a question that asks for a value deserve the sentences that state one? eval/dev chooses, eval/test reports.

Two thirds of the gold answers in eval/ are values (a voltage, a size, a version), and replay scores
those 1/0 on the gold numbers being in the answer shown. The shipped extractive score
(gateway/answer/extractive.py) counts the question's terms a sentence holds and knows nothing of
what kind of answer the question wants. This script tries, on the same candidates (the shipped
sentences of the top passages), a bonus for sentences that state a quantity (a number beside a unit
or a question term, not a step or page number) when the question asks for one (gateway.answer.
extractive.asks_for_value), over the top 3 or 5 passages and 2, 3 or 4 sentences; every choice on
eval/dev, eval/test scored once with it. Each half is its own gateway (its manuals plus the two
sample manuals, ingested by the real path into a cache folder, searched with the shipped settings);
correctness is replay's (gateway.qa.metrics.correctness) over every answerable question with a gold
answer, before any not-found decision.

    .venv/bin/python -m bench.experiments.extractive_quantities [--no-write]
"""

from __future__ import annotations

import argparse
import dataclasses
import pickle
import random
import sys
from pathlib import Path
from typing import Any

from bench.harness import write_section
from bench.suite.retrieval_eval import build, shipped, split_paths
from gateway.qa.metrics import correctness

CACHE = Path("/tmp/manualqa-extractive-quantities")
BONUSES = (0.0, 0.25, 0.5, 1.0, 2.0)
PASSAGES = (3, 5)
COUNTS = (2, 3, 4)
SHIPPED = {"value_bonus": 0.0, "max_passages": 3, "max_sentences": 3}


def hits_for(split: str) -> list[tuple[dict[str, Any], list[Any]]]:
    """(question, top hits) for every answerable question with a gold answer, cached per split."""
    cached = CACHE / f"{split}.pkl"
    if cached.is_file():
        return pickle.loads(cached.read_bytes())  # noqa: S301 - our own cache file
    from gateway.config import AnswerSettings
    from retrieval.embedders import load_embedder
    from retrieval.search import search
    from retrieval.types import SearchParams

    embedder = load_embedder()
    pdfs, questions = split_paths(split)
    store = build(pdfs, shipped()[0], embedder, CACHE / split)
    k = AnswerSettings().max_passages
    out = [(q, search(store, embedder, q["question"], SearchParams(k=k))[:k]) for q in questions
           if q.get("answerable") and q.get("answer")]
    CACHE.mkdir(parents=True, exist_ok=True)
    cached.write_bytes(pickle.dumps(out))
    return out


def scores(items: list[tuple[dict[str, Any], list[Any]]], **setting: Any) -> list[float]:
    from gateway.answer.extractive import EVIDENCE, extractive_answer

    params = dataclasses.replace(EVIDENCE, **setting)
    return [correctness(extractive_answer(q["question"], hits, params), q["answer"]) for q, hits in items]


def mean(xs: list[float]) -> float:
    return sum(xs) / len(xs) if xs else 0.0


def paired_interval(a: list[float], b: list[float], rounds: int = 2000, seed: int = 7) -> tuple[float, float]:
    """95 % paired-bootstrap interval of mean(b) - mean(a)."""
    rng = random.Random(seed)
    n, diffs = len(a), []
    for _ in range(rounds):
        idx = [rng.randrange(n) for _ in range(n)]
        diffs.append(sum(b[i] - a[i] for i in idx) / n)
    diffs.sort()
    return diffs[int(0.025 * rounds)], diffs[int(0.975 * rounds)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    dev, test = hits_for("dev"), hits_for("test")
    grid: dict[tuple[float, int, int], float] = {}
    for bonus in BONUSES:
        for p in PASSAGES:
            for c in COUNTS:
                grid[(bonus, p, c)] = mean(scores(dev, value_bonus=bonus, max_passages=p, max_sentences=c))
    base = (SHIPPED["value_bonus"], SHIPPED["max_passages"], SHIPPED["max_sentences"])
    best = max(grid, key=lambda key: (round(grid[key], 4), -key[2], -key[1]))  # ties: fewer sentences, passages

    def setting(key: tuple[float, int, int]) -> dict[str, Any]:
        return {"value_bonus": key[0], "max_passages": key[1], "max_sentences": key[2]}

    dev_base, dev_best = scores(dev, **setting(base)), scores(dev, **setting(best))
    test_base, test_best = scores(test, **setting(base)), scores(test, **setting(best))
    lo, hi = paired_interval(dev_base, dev_best)
    tlo, thi = paired_interval(test_base, test_best)
    lines = ["## Extractive answers: sentences that state a value when one is asked for "
             "(bench/experiments/extractive_quantities.py)", "",
             "Correctness (replay's) of the extractive answer over every answerable question with a gold answer, "
             "before any not-found decision. Rows: the shipped setting before this experiment and the best of "
             f"{len(grid)} settings on eval/dev (value bonus x passages x sentences), scored once on eval/test.", "",
             "| setting | value bonus | passages | sentences | dev correctness | test correctness |",
             "|---|---|---|---|---|---|",
             f"| shipped before | {base[0]:g} | {base[1]} | {base[2]} | {mean(dev_base):.3f} ({len(dev)} q) | "
             f"{mean(test_base):.3f} ({len(test)} q) |",
             f"| best on dev | {best[0]:g} | {best[1]} | {best[2]} | {mean(dev_best):.3f} | {mean(test_best):.3f} |",
             "",
             "Gain of the best dev setting, paired bootstrap 95 % interval: dev "
             f"{mean(dev_best) - mean(dev_base):+.3f} "
             f"[{lo:+.3f}, {hi:+.3f}] (chosen among {len(grid)}, so optimistic), test "
             f"{mean(test_best) - mean(test_base):+.3f} [{tlo:+.3f}, {thi:+.3f}].", "",
             "Development grid (rows: value bonus; columns: passages x sentences):", "",
             "| bonus | " + " | ".join(f"{p}p x {c}" for p in PASSAGES for c in COUNTS) + " |",
             "|---|" + "---|" * (len(PASSAGES) * len(COUNTS))]
    for bonus in BONUSES:
        lines.append(f"| {bonus:g} | " + " | ".join(f"{grid[(bonus, p, c)]:.3f}" for p in PASSAGES for c in COUNTS)
                     + " |")
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_write:
        write_section(__spec__.name, text, conditions="It ingests both halves once into " + str(CACHE)
                      + " (kept between runs) and scores the shipped candidates under each setting.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
