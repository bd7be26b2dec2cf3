"""Ingest faults on Chinese and German manuals (issue 47): outline headings in unspaced scripts, stale
titles, long running footers. Each half is ingested by the real path (bench.suite.languages_eval's
halves: its manuals + the two sample manuals, shipped settings, the configured embedder, k = 5) and
every question's rank is kept, so a change is read question by question.

    python -m bench.experiments.foreign_ingest --before 60d1a2f               # dev halves, a revision beside
    python -m bench.experiments.foreign_ingest --halves zh-test de-test test --before 60d1a2f   # once, at the end
    python -m bench.experiments.foreign_ingest --context heading --save out.json   # no title in chunk text
    python -m bench.experiments.foreign_ingest --before-json earlier.json       # beside a saved run's "now"

A tree measured by PYTHONPATH=<tree> imports its own code (ROOT goes after PYTHONPATH). The results are
written by hand into docs/bench/experiments/foreign_ingest.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
ROOT = HERE.parents[2]


def measure(halves: list[str], context: str | None = None) -> dict[str, Any]:
    """{half: {"questions": [{id, group, rank, top}], "manuals": {file: title}, "chunks": n, "headed": n}}."""
    from bench.suite.languages_eval import EVAL, SAMPLES, gold_rank, group_of, questions_of
    from gateway.config import Settings
    from gateway.services import Services
    from ingest.models import ChunkParams

    out: dict[str, Any] = {}
    for half in halves:
        folder = EVAL / half
        pdfs = sorted((folder / "manuals").glob("*.pdf")) + sorted(SAMPLES.glob("*.pdf"))
        with tempfile.TemporaryDirectory(prefix=f"fi-{half}-") as tmp:
            settings = Settings(data_dir=Path(tmp) / "data")
            if context:  # what each chunk carries into its embedding besides its text (ChunkParams.context)
                settings.chunking = ChunkParams(context=context)
            gw = Services(settings)
            t = time.perf_counter()
            report = gw.ingest(pdfs)
            if getattr(report, "failed", None):
                raise SystemExit(f"{half}: ingest failed: {report.failed}")
            ingest_s = time.perf_counter() - t
            store = gw.store.open().chunks
            manuals = {m["filename"] if "filename" in m else str(m.get("file_name", m.get("sha256"))): m.get("title")
                       for m in store.manuals()}
            rows = []
            for q in questions_of(folder):
                if not q["answerable"]:
                    continue
                hits = gw.search(q["question"], k=5)
                top = hits[0] if hits else None
                rows.append({"id": q["id"], "group": group_of(half, q["id"]), "rank": gold_rank(hits, q),
                             "gold": [q["manual"], q["pages"]],
                             "top": [top.manual, top.page, top.heading, top.text[:80]] if top else None})
            gw.log.close()
        out[half] = {"questions": rows, "manuals": manuals, "ingest_s": ingest_s}
    return out


def in_tree(tree: Path, halves: list[str]) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile(suffix=".json") as fh:
        env = {**os.environ, "PYTHONPATH": str(tree)}
        subprocess.run([sys.executable, str(HERE), "--measure", fh.name, "--halves", *halves],
                       cwd=tree, env=env, check=True)
        return dict(json.loads(Path(fh.name).read_text()))


def summary(res: dict[str, Any]) -> dict[tuple[str, str], tuple[int, float, float, float]]:
    """(half, group) -> (n, hit@1, hit@5, MRR); pooled rows under half "pooled"."""
    acc: dict[tuple[str, str], list[int | None]] = {}
    for half, data in res.items():
        for q in data["questions"]:
            acc.setdefault((half, q["group"]), []).append(q["rank"])
            acc.setdefault(("pooled", q["group"]), []).append(q["rank"])
    out = {}
    for key, ranks in acc.items():
        n = len(ranks)
        out[key] = (n, sum(r == 1 for r in ranks) / n, sum(r is not None for r in ranks) / n,
                    sum(1 / r for r in ranks if r) / n)
    return out


def report(sides: dict[str, dict[str, Any]]) -> str:
    names = list(sides)
    sums = {s: summary(r) for s, r in sides.items()}
    lines = ["| half | asked in | n | " + " | ".join(f"{s} hit@1 / hit@5 / MRR" for s in names) + " |",
             "|---|---|---|" + "---|" * len(names)]
    order = list(sides[names[0]])
    for key in sorted(sums[names[0]], key=lambda k: (k[0] == "pooled", order.index(k[0]) if k[0] in order else 0)):
        cells = [" / ".join(f"{v:.2f}" for v in sums[s].get(key, (0, 0, 0, 0))[1:]) for s in names]
        lines.append(f"| {key[0]} | {key[1]} | {sums[names[0]][key][0]} | " + " | ".join(cells) + " |")
    if len(names) == 2:
        a, b = (sides[s] for s in names)
        lines.append("\nQuestions whose rank changed (before -> now; top hit now):")
        for half in b:
            if half not in a:
                continue
            before = {q["id"]: q for q in a[half]["questions"]}
            for q in b[half]["questions"]:
                p = before.get(q["id"])
                if p and p["rank"] != q["rank"]:
                    lines.append(f"- {q['id']}: {p['rank']} -> {q['rank']} gold {q['gold']} top before "
                                 f"{p['top'][:3] if p['top'] else None} now {q['top'][:3] if q['top'] else None}")
        for half in b:
            if half in a and a[half]["manuals"] != b[half]["manuals"]:
                lines.append(f"- titles {half}: {a[half]['manuals']} -> {b[half]['manuals']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--halves", nargs="+", default=["zh-dev", "zh-dev2", "de-dev", "de-dev2", "dev"])
    parser.add_argument("--before", help="a git revision measured the same way")
    parser.add_argument("--before-json", help="a saved --save of an earlier run's sides")
    parser.add_argument("--save", help="write both sides' raw results here (JSON)")
    parser.add_argument("--context", choices=("heading", "title+heading"), help="chunk context (default: shipped)")
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    sys.path.append(str(ROOT))  # after PYTHONPATH: a tree measured by in_tree imports its own code
    if args.measure:
        Path(args.measure).write_text(json.dumps(measure(args.halves, args.context), ensure_ascii=False))
        return 0
    from bench.harness import source_tree

    sides: dict[str, dict[str, Any]] = {}
    if args.before_json:
        sides["before"] = json.loads(Path(args.before_json).read_text())["now"]
    elif args.before:
        with source_tree(args.before) as tree:
            sides[f"before ({args.before})"] = in_tree(tree, args.halves)
    sides["now"] = measure(args.halves, args.context)
    if args.save:
        Path(args.save).write_text(json.dumps(sides, ensure_ascii=False))
    print(report(sides))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
