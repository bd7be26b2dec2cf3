"""Run every benchmark script, then assemble docs/benchmarks.md from the sections they write.

    .venv/bin/python -m bench.run_all            # everything (long: tens of minutes on 2 cores)
    .venv/bin/python -m bench.run_all --assemble # only rebuild docs/benchmarks.md from docs/bench/

Each script writes its own section (docs/bench/<name>.md) with the machine and the conditions.
They are benchmarks, not tests: nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SECTIONS_DIR = REPO / "docs" / "bench"
OUT = REPO / "docs" / "benchmarks.md"
SCRIPTS = ["retrieval_eval", "retrieval_quality", "search_latency", "ingest_throughput", "runtime_overhead",
           "worker_overhead", "answer_quality", "pipeline_overhead", "server"]
ORDER = ["retrieval_eval", "reranker", "answer_eval", "technician_page", "embedders", "builtin_embedder", "llm_rerank",
         "dense_variants", "retrieval", "ingest", "parse_cost", "runtime", "worker", "answers", "pipeline_overhead",
         "server", "bench_profiles", "chunking", "load", "hostile_bodies", "query_batching", "search_cpu",
         "embedder_startup", "startup", "issue12_goals", "house_redesign"]
# pages that a section links to for detail, not sections of their own
DETAILS = {"body_memory"}

HEADER = """# Benchmarks

Every figure in this file comes from a script in `bench/` that anyone can rerun
(`make bench`, or `.venv/bin/python -m bench.<name>`); each section names its script, the machine
and the conditions. Comparisons are made side by side in one run (ratios), because these
machines are noisy. Sections are assembled by `python -m bench.run_all --assemble`.
"""


def assemble(out: Path = OUT) -> Path:
    """docs/benchmarks.md from the section files, in ORDER (sections not listed follow, by name)."""
    sections = {p.stem: p for p in SECTIONS_DIR.glob("*.md") if p.stem not in DETAILS}
    names = [n for n in ORDER if n in sections] + sorted(set(sections) - set(ORDER))
    # a combined section (e.g. retrieval.md) already includes its parts: do not repeat them
    if "retrieval" in names:
        names = [n for n in names if n not in ("retrieval_quality", "search_latency")]
    body = [HEADER]
    for name in names:
        text = sections[name].read_text(encoding="utf-8").strip()
        body.append("#" + text if text.startswith("# ") else text)  # each section is an h2 here
    out.write_text("\n\n".join(body).rstrip() + "\n", encoding="utf-8")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--assemble", action="store_true", help="only rebuild docs/benchmarks.md")
    args = parser.parse_args()
    failed = []
    if not args.assemble:
        for name in SCRIPTS:
            if not (REPO / "bench" / f"{name}.py").is_file():
                continue
            print(f"== bench.{name}", flush=True)
            if subprocess.run([sys.executable, "-m", f"bench.{name}"], cwd=REPO).returncode != 0:
                failed.append(name)
    print(f"wrote {assemble()}")
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
