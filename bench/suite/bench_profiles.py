"""`manualqa bench` on the default profile vs. a second llama.cpp profile, as Markdown.

    python -m bench.suite.bench_profiles [--data DIR] [--limit 3] [--repeat 2]
        [--profiles profiles/x86-cpu.toml profiles/x86-cpu-1thread.toml] [--no-write]   # docs/bench/bench_profiles.md

Builds an index of sample_manuals in a temporary data directory unless --data names one with an
active index, then runs the real command (each profile in its own process, interleaved) and
prints its table with the recorded conditions and the command line that produced it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.harness import REPO, tree_env, write_section

MANUALQA = [sys.executable, "-m", "gateway"]


SAME_ARTIFACT = ("Both profiles run the same artifact (same chain id: the thread count is a runtime option, not "
                 "part of the artifact chain), so no artifact note is printed; `--json` / `--output` carry each "
                 "run's per-answer timings, the full chains and every recorded condition.")


def main(argv: list[str] | None = None, *, module: str = "", title: str = "", note: str = SAME_ARTIFACT) -> int:
    """Run `manualqa bench` and write its section (`module`: the section's script, this one by default)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="")
    ap.add_argument("--limit", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--profiles", nargs="+", default=["profiles/x86-cpu.toml", "profiles/x86-cpu-1thread.toml"])
    ap.add_argument("--questions", default="sample_manuals/questions.jsonl")
    ap.add_argument("--no-write", action="store_true", help="print only")
    ap.add_argument("--json-out", default="", help="also keep the command's full JSON here")
    args = ap.parse_args(argv)
    tmp = tempfile.TemporaryDirectory(prefix="manualqa-benchprofiles-")
    data = Path(args.data or tmp.name)
    env = tree_env(data)
    if not (data / "ACTIVE").is_file():
        subprocess.run([*MANUALQA, "ingest", "sample_manuals"], cwd=REPO, env=env, check=True,
                       stdout=subprocess.DEVNULL)
    out_json = Path(args.json_out or Path(tmp.name) / "bench.json")
    cmd = ["manualqa", "bench", "--profiles", *args.profiles, "--questions", args.questions,
           "--limit", str(args.limit), "--repeat", str(args.repeat)]
    started = time.time()
    proc = subprocess.run([*MANUALQA, *cmd[1:], "--output", str(out_json)], cwd=REPO, env=env,
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        return proc.returncode
    report = json.loads(out_json.read_text())
    c = report["conditions"]
    lines = [
        title or "## Same-conditions comparison of deployment profiles (`manualqa bench`)",
        "",
        f"`{' '.join(cmd)}` on an index of the two sample manuals "
        f"({time.strftime('%Y-%m-%d', time.localtime(started))}, {time.time() - started:.0f} s wall).",
        "",
        f"Machine: {c['device']}, {c['cpu_model']}, {c['cores_available']} of {c['cpu_count']} cores available, "
        f"load average {c['load_average'][0]:.1f} at the start and {c['load_average_after'][0]:.1f} at the end "
        "(the box is shared with other work: absolute figures are pessimistic, the comparison is "
        "interleaved so that load falls on both profiles alike).",
        "",
        "```",
        proc.stdout.rstrip(),
        "```",
        "",
        note,
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_write:
        write_section(module or __spec__.name, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
