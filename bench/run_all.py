"""Run the benchmark suite, then assemble docs/benchmarks.md from the sections its scripts write.

    python -m bench.run_all              # every suite script (long: hours on 2 cores), then assemble
    python -m bench.run_all --only server startup   # some of them, then assemble
    python -m bench.run_all --assemble   # only rebuild docs/benchmarks.md from docs/bench/
    python -m bench.run_all --list       # the suite, in the order of docs/benchmarks.md

bench/suite/<name>.py measures a figure the README or the docs cite and writes docs/bench/<name>.md
through bench.harness.write_section (its rerun command, commit, machine and time at the end);
SUITE below lists every one of them (tests/test_bench_suite.py holds the two to each other).
bench/experiments/ holds one-off decisions: each wrote docs/bench/experiments/<name>.md with the
commit it ran on, and docs/benchmarks.md only lists them, as it lists the hand-written dated records
in docs/records/. They are benchmarks, not tests: nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

from bench.harness import EXPERIMENTS, REPO, SECTIONS

OUT = REPO / "docs" / "benchmarks.md"
RECORDS = REPO / "docs" / "records"
# the suite, in the order its sections appear in docs/benchmarks.md
SUITE = ["retrieval_eval", "languages_eval", "answer_eval", "model_answers", "retrieval_quality", "search_latency",
         "ingest_throughput", "runtime_overhead", "worker_overhead", "stop_prompt", "pipeline_overhead", "server",
         "bench_profiles", "artifacts", "startup"]

HEADER = """# Benchmarks

Every figure in this file comes from a script in `bench/suite/` that anyone can rerun: `make bench`
reruns them all and assembles this file (`python -m bench.run_all`), or one at a time with
`.venv/bin/python -m bench.suite.<name>`; each section ends with its rerun command, the commit, the
machine and the time. Comparisons are made side by side in one run (ratios), because these machines
are noisy. Sections are assembled by `python -m bench.run_all --assemble`; one-off experiments and
dated records are listed at the end.

**eval/test changed on 2026-12-05.** Two of its four manuals (the NOAA PMEL ASVCO2 and LCP
control-board manuals, 44 of its 97 questions) turned out to be on `../shared/reserved_manuals.txt`,
manuals kept for independent evaluation that no question may be written for; they and their
questions were removed and two other manuals took their place (eval/test/README.md). Every eval/test
figure measured before that date, in the sections below, was measured on the old half with them.
"""


def title(path: Path) -> str:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            return line.lstrip("#").strip()
    return path.stem


def recorded_at(path: Path) -> str:
    """The commit a record names first ("commit `abc1234`"), or '' when it names none."""
    m = re.search(r"commit `([0-9a-f]{7,40})", path.read_text(encoding="utf-8"))
    return m.group(1) if m else ""


def index(heading: str, paths: list[Path]) -> list[str]:
    lines = [f"### {heading}", ""]
    for p in paths:
        commit = recorded_at(p)
        lines.append(f"- [{title(p)}]({p.relative_to(OUT.parent).as_posix()})"
                     + (f", commit `{commit}`" if commit else ""))
    return lines


def assemble(out: Path = OUT) -> Path:
    """docs/benchmarks.md: the suite's sections in SUITE order, then the list of experiments and records.
    A section file that no suite script writes is an error: it would be a hand-written figure."""
    missing = [n for n in SUITE if not (SECTIONS / f"{n}.md").is_file()]
    stray = sorted(p.name for p in SECTIONS.glob("*.md") if p.stem not in SUITE)
    if missing or stray:
        raise SystemExit(f"docs/bench/ must hold exactly the suite's sections: missing {missing}, "
                         f"written by no suite script {stray} (move a one-off result to docs/bench/experiments/ "
                         "and a hand-written one to docs/records/)")
    body = [HEADER]
    for name in SUITE:
        text = (SECTIONS / f"{name}.md").read_text(encoding="utf-8").strip()
        body.append("#" + text if text.startswith("# ") else text)  # each section is an h2 here
    tail = ["## Experiments and records", "",
            "Not rerun by `make bench`: one-off decisions (`bench/experiments/`, each with the commit it ran "
            "on and its rerun command) and hand-written dated records of runs (`docs/records/`).", ""]
    tail += index("Experiments", sorted(EXPERIMENTS.glob("*.md"))) + [""]
    tail += index("Dated records", sorted(RECORDS.glob("*.md")))
    body.append("\n".join(tail))
    out.write_text("\n\n".join(body).rstrip() + "\n", encoding="utf-8")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--assemble", action="store_true", help="only rebuild docs/benchmarks.md")
    parser.add_argument("--only", nargs="+", choices=SUITE, metavar="NAME", help="run only these suite scripts")
    parser.add_argument("--list", action="store_true", help="print the suite and exit")
    args = parser.parse_args()
    if args.list:
        print("\n".join(f"bench.suite.{name}" for name in SUITE))
        return 0
    failed = []
    if not args.assemble:
        for name in args.only or SUITE:
            print(f"== bench.suite.{name}", flush=True)
            if subprocess.run([sys.executable, "-m", f"bench.suite.{name}"], cwd=REPO).returncode != 0:
                failed.append(name)
    print(f"wrote {assemble()}")
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
