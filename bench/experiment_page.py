"""What the experiments over the language halves (bench/experiments) share: their options and the page each writes.

Each script under bench/experiments measures variants on some halves (`--halves`), prints its page and
writes it to docs/bench/experiments/<script>.md unless `--no-write`: a title naming the script, its
docstring's second paragraph (what was measured), the table, what was chosen, the machine and the raw counts.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def parser(doc: str | None, halves: list[str]) -> argparse.ArgumentParser:
    """The script's options: --halves (default `halves`) and --no-write; a script adds its own."""
    out = argparse.ArgumentParser(description=(doc or "").splitlines()[0])
    out.add_argument("--halves", nargs="+", default=halves)
    out.add_argument("--no-write", action="store_true")
    return out


def intro(doc: str | None) -> str:
    """The docstring's second paragraph: what the script measures, as the page says it."""
    return (doc or "").split("\n\n")[1]


def publish(script: str, title: str, body: str, raw: object, *, write: bool, machine: bool = True) -> str:
    """The page of `script` (its __file__): "## title (bench/experiments/<name>.py)", then body, the machine
    it ran on (machine=True) and the raw results as JSON; printed, and written under docs/bench/experiments
    when `write`."""
    name = Path(script).stem
    text = f"## {title} (bench/experiments/{name}.py)\n\n{body}"
    if machine:
        from bench.harness import machine_markdown

        text += "\n\n" + machine_markdown()
    text += "\n\nRaw: " + json.dumps(raw)
    print(text)
    if write:
        (REPO / "docs/bench/experiments" / f"{name}.md").write_text(text + "\n", "utf-8")
    return text


def setup_rows(results: dict[str, dict[str, dict[str, list[int]]]], groups: tuple[str, ...], column: str) -> list[str]:
    """A table of {setup: {variant: {group: [hit@1, hit@5, n, ...]}}}: a row per setup and variant, a column per
    group, each cell "hit@1 / hit@5 of n" ("-" where the group was not asked)."""
    rows = [f"| setup | {column} | " + " | ".join(groups) + " |", "|---|---|" + "---|" * len(groups)]
    for setup, by_variant in results.items():
        for variant, counts in by_variant.items():
            cells = [f"{c[0]} / {c[1]} of {c[2]}" if (c := counts.get(g)) else "-" for g in groups]
            rows.append(f"| {setup} | {variant} | " + " | ".join(cells) + " |")
    return rows


def add_counts(total: dict[str, list[int]], counts: dict[str, list[int]]) -> None:
    """Adds one gateway's {group: [hit@1, hit@5, n, ...]} into a running total, in place."""
    for group, c in counts.items():
        t = total.setdefault(group, [0] * len(c))
        for i, v in enumerate(c):
            t[i] += v
