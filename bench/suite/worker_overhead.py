"""What the supervised worker costs: llama.cpp streamed through its worker process against in-process.

Two harness processes load the same GGUF with the same options, one with isolation "in-process"
(LlamaCppRuntime in the harness itself, as before the worker existed) and one with the default
"process" (runtimes.supervised: the model in a child, tokens over a pipe). The parent alternates
rounds between them (in, worker, in, worker, ...) so both see the same machine load, and varies the
system prompt per round so neither reuses a KV cache. Same harness for both: TTFT = stream() call
to the first piece; decode tokens/s = (pieces - 1) / (last piece - first piece). Idle memory is
the RSS after loading and one warm-up answer: the harness alone, or the harness plus its worker.

    python -m bench.suite.worker_overhead [--rounds 12] [--max-tokens 64]   # docs/bench/worker_overhead.md

Goals (issue 22): decode ratio >= 0.98, TTFT overhead <= 10 ms, added idle memory <= 30 MiB.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.harness import MIB, REPO, write_section
from bench.suite.runtime_overhead import messages


def harness(isolation: str, max_tokens: int) -> None:
    """One side: load, then answer a round per line on stdin; one JSON line per round on stdout."""
    import os

    from runtimes.base import GenerationConfig, GenerationStats
    from runtimes.registry import create_runtime
    from runtimes.worker_protocol import rss_bytes

    rt = create_runtime("llamacpp", "default", {"isolation": isolation})
    t0 = time.perf_counter()
    rt.load()
    load_s = time.perf_counter() - t0
    config = GenerationConfig(max_tokens=max_tokens, temperature=0.0)

    def run(round_no: int) -> dict[str, Any]:
        started = time.perf_counter()
        first = last = None
        pieces = 0
        stats = None
        for item in rt.stream(messages(round_no), config):
            if isinstance(item, GenerationStats):
                stats = item
                continue
            last = time.perf_counter()
            first = first or last
            pieces += 1
        assert first is not None and last is not None and stats is not None
        return {"ttft_ms": (first - started) * 1000, "pieces": pieces,
                "decode_tps": (pieces - 1) / (last - first) if pieces > 1 and last > first else None,
                "prompt_tokens": stats.prompt_tokens}

    run(-1)  # warm-up: the first prompt pays page faults on both sides
    worker_pid = getattr(rt, "pid", None)
    memory = {"harness_rss": rss_bytes(os.getpid()), "worker_rss": rss_bytes(worker_pid) if worker_pid else 0}
    print(json.dumps({"ready": True, "load_s": load_s, **memory}), flush=True)
    for line in sys.stdin:
        print(json.dumps(run(int(line))), flush=True)
    rt.unload()


def start(isolation: str, max_tokens: int) -> tuple[subprocess.Popen[str], dict[str, Any]]:
    proc = subprocess.Popen([sys.executable, "-m", __spec__.name, "--harness", isolation,
                             "--max-tokens", str(max_tokens)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=REPO)
    assert proc.stdout is not None
    return proc, json.loads(proc.stdout.readline())


def ask(proc: subprocess.Popen[str], round_no: int) -> dict[str, Any]:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(f"{round_no}\n")
    proc.stdin.flush()
    return json.loads(proc.stdout.readline())


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def llama_version() -> str:
    from importlib import metadata

    return metadata.version("llama_cpp_python")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--out", type=Path, default=None, help="the Markdown file (default: its section)")
    parser.add_argument("--harness", choices=["in-process", "process"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.harness:
        harness(args.harness, args.max_tokens)
        return 0
    sides = {"in-process": start("in-process", args.max_tokens), "process": start("process", args.max_tokens)}
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in sides}
    for r in range(args.rounds):
        order = ["in-process", "process"] if r % 2 == 0 else ["process", "in-process"]
        for name in order:
            results[name].append(ask(sides[name][0], r))
    for proc, _ in sides.values():
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=60)

    def median(name: str, key: str) -> float:
        return statistics.median(x[key] for x in results[name] if x[key] is not None)

    ttft_in, ttft_w = median("in-process", "ttft_ms"), median("process", "ttft_ms")
    tps_in, tps_w = median("in-process", "decode_tps"), median("process", "decode_tps")
    paired = [w["ttft_ms"] - i["ttft_ms"] for i, w in zip(results["in-process"], results["process"], strict=True)]
    mem_in = sides["in-process"][1]["harness_rss"]
    mem_w = sides["process"][1]["harness_rss"] + sides["process"][1]["worker_rss"]
    added = (mem_w - mem_in) / MIB
    lines = [
        "## Generation through the supervised worker vs in-process (bench/suite/worker_overhead.py)",
        "",
        f"llama-cpp-python {llama_version()}; SmolLM2-135M-Instruct Q4_1 (the default model), "
        f"{args.rounds} alternating rounds per side, max {args.max_tokens} tokens, temperature 0, a "
        f"{results['process'][0]['prompt_tokens']}-token prompt whose system line changes per round.",
        "",
        "| | in-process | worker process | worker / in-process | goal |",
        "|---|---|---|---|---|",
        f"| decode tokens/s (median) | {tps_in:.1f} | {tps_w:.1f} | {tps_w / tps_in:.3f} | >= 0.98: "
        f"{verdict(tps_w / tps_in >= 0.98)} |",
        f"| TTFT ms (median) | {ttft_in:.1f} | {ttft_w:.1f} | {ttft_w - ttft_in:+.1f} ms (paired median "
        f"{statistics.median(paired):+.1f} ms) | <= +10 ms: {verdict(statistics.median(paired) <= 10)} |",
        f"| idle RSS after load + one answer | {mem_in / MIB:.0f} MiB | {sides['process'][1]['harness_rss'] / MIB:.0f}"
        f" + {sides['process'][1]['worker_rss'] / MIB:.0f} MiB (gateway + worker) | {added:+.1f} MiB | "
        f"<= +30 MiB: {verdict(added <= 30)} |",
        f"| load (process start to ready) | {sides['in-process'][1]['load_s']:.2f} s | "
        f"{sides['process'][1]['load_s']:.2f} s | | |",
        "",
        "The worker's memory is a second Python interpreter with llama-cpp-python (and numpy, which it "
        "imports) beside the model's pages; the gateway process itself no longer maps the model. A crash "
        "costs one answer and a restart (the load time above), never the gateway.",
    ]
    write_section(__spec__.name, "\n".join(lines), out=args.out)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
