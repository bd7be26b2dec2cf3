"""Cold start and idle memory of `manualqa serve`, two source trees side by side (issue 12 goals).

Each tree ingests the sample manuals into its own data directory with its own defaults (so each
side's index is built by its own embedder), then rounds alternate between the trees: spawn
`python -m gateway serve` from that tree, time spawn -> first 200 from /api/v1/health, read the
server's VmRSS once ready (idle) and after one extractive answer, and whether libtorch got mapped
into the process. Twice per round: answer.mode = extractive (no LLM is loaded) and generate (the
default profile's model loads before /health says ok). In the extractive server, `--clients` threads
then send /api/v1/search requests together (the sample question set, round robin; the issue's
"16 concurrent searches"), latency per request at the client. With `--ingest DIR`, each round also
times each tree's `manualqa ingest DIR` (a CLI process from start to exit, into an empty data
directory: parse, chunk, embed, write, verify, activate). Medians over rounds; ratios after/before.

    .venv/bin/python -m bench.startup --before /tmp/wt-before --after . [--rounds 3] [--ingest DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.retrieval_quality import machine_markdown  # noqa: E402

PYTHON = str(REPO / ".venv" / "bin" / "python")
OUT = REPO / "docs" / "bench" / "startup.md"
QUESTION = "What input voltage range does the piston board accept?"
QUESTIONS = [json.loads(line)["question"] for line in
             (REPO / "sample_manuals" / "questions.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(data: Path, mode: str) -> dict[str, str]:
    return {**os.environ, "MANUALQA_DATA": str(data), "MANUALQA_ANSWER__MODE": mode, "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1"}


def _rss_mib(pid: int, field: str = "VmRSS") -> float:
    """VmRSS, or RssAnon (memory only the process holds) / RssFile (pages of mapped files, such as an
    mmap'd GGUF, which the kernel can drop and read again) from /proc/PID/status, in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _cpu_s(pid: int) -> float:
    """CPU seconds (user + system) the process has used so far, from /proc/PID/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _has_torch(pid: int) -> bool:
    return "libtorch" in Path(f"/proc/{pid}/maps").read_text()


def concurrent_searches(port: int, clients: int, per_client: int) -> list[float]:
    """Milliseconds per /api/v1/search, `clients` threads released together, each sending in turn."""
    start = threading.Barrier(clients)
    latencies: list[float] = []
    lock = threading.Lock()

    def client(n: int) -> None:
        with httpx.Client(timeout=60) as http:
            start.wait()
            for i in range(per_client):
                q = QUESTIONS[(n * per_client + i) % len(QUESTIONS)]
                t0 = time.perf_counter()
                http.post(f"http://127.0.0.1:{port}/api/v1/search", json={"query": q, "k": 5}).raise_for_status()
                with lock:
                    latencies.append((time.perf_counter() - t0) * 1000)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return latencies


def timed_ingest(tree: Path, corpus: Path) -> dict[str, Any]:
    """One `manualqa ingest` CLI run into an empty data directory: seconds, pages and chunks."""
    with tempfile.TemporaryDirectory(prefix="manualqa-ingest-") as data:
        t0 = time.perf_counter()
        out = subprocess.run([PYTHON, "-m", "gateway", "ingest", str(corpus), "--json"], cwd=tree,
                             env=_env(Path(data), "extractive"), check=True, capture_output=True, text=True)
        wall = time.perf_counter() - t0
    report = json.loads(out.stdout)
    return {"wall_s": wall, "pages": report["pages"], "chunks": report["embedded"]}


def cold_start(tree: Path, data: Path, mode: str, clients: int = 0, per_client: int = 0) -> dict[str, Any]:
    port = _port()
    t0 = time.perf_counter()
    proc = subprocess.Popen([PYTHON, "-m", "gateway", "serve", "--host", "127.0.0.1", "--port", str(port),
                             "--log-level", "warning"], cwd=tree, env=_env(data, mode),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"server from {tree} exited early")
            try:
                if httpx.get(f"http://127.0.0.1:{port}/api/v1/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.02)
        ready_s = time.perf_counter() - t0
        idle = _rss_mib(proc.pid)
        anon, mapped = _rss_mib(proc.pid, "RssAnon"), _rss_mib(proc.pid, "RssFile")
        httpx.post(f"http://127.0.0.1:{port}/api/v1/ask", json={"question": QUESTION, "mode": "extractive"},
                   timeout=120).raise_for_status()
        after_answer = _rss_mib(proc.pid)
        cpu0 = _cpu_s(proc.pid)
        searches = concurrent_searches(port, clients, per_client) if clients else []
        server_cpu_ms = (_cpu_s(proc.pid) - cpu0) * 1000 / max(1, len(searches))
        return {"ready_s": ready_s, "idle_mib": idle, "after_answer_mib": after_answer, "anon_mib": anon,
                "file_mib": mapped, "torch": _has_torch(proc.pid), "search_ms": searches,
                "server_cpu_ms": server_cpu_ms}
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=Path, required=True, help="source tree of the old code")
    ap.add_argument("--after", type=Path, default=REPO, help="source tree of the new code")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--clients", type=int, default=16, help="concurrent search clients (0: none)")
    ap.add_argument("--per-client", type=int, default=8, help="searches per client and round")
    ap.add_argument("--ingest", type=Path, default=None, help="a folder of PDFs each tree ingests per round")
    ap.add_argument("--out", type=Path, default=OUT, help="the Markdown file to write")
    args = ap.parse_args()
    trees = {"before": args.before.resolve(), "after": args.after.resolve()}
    results: dict[tuple[str, str], list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="manualqa-startup-") as tmp:
        data = {side: Path(tmp) / side for side in trees}
        for side, tree in trees.items():
            subprocess.run([PYTHON, "-m", "gateway", "ingest", str(REPO / "sample_manuals")], cwd=tree,
                           env=_env(data[side], "extractive"), check=True, capture_output=True)
        for r in range(args.rounds):
            order = list(trees) if r % 2 == 0 else list(reversed(trees))
            for side in order:
                for mode in ("extractive", "generate"):
                    clients = args.clients if mode == "extractive" else 0
                    results.setdefault((side, mode), []).append(
                        cold_start(trees[side], data[side], mode, clients, args.per_client))
                if args.ingest:
                    results.setdefault((side, "ingest"), []).append(timed_ingest(trees[side], args.ingest))
    lines = ["## Cold start and idle memory of `manualqa serve` (bench/startup.py)", "",
             f"Two source trees side by side, {args.rounds} alternating rounds, medians; before = "
             f"`{_rev(trees['before'])}`, after = `{_rev(trees['after'])}`. Each side's index was built by its own "
             "default embedder. `extractive`: no LLM loaded; `generate`: the default profile's SmolLM2-135M "
             "loads before /health answers 200. Goals (issue 12): <= 2 s without the LLM, <= 3 s with it, idle "
             "RSS <= 400 MiB.", "",
             "| mode | side | spawn -> /health 200 (s) | idle RSS (MiB) | of which anonymous / file-backed | "
             "RSS after an answer (MiB) | torch mapped |",
             "|---|---|---|---|---|---|---|"]
    for mode in ("extractive", "generate"):
        med = {}
        for side in trees:
            rows = results[(side, mode)]
            med[side] = {k: statistics.median(x[k] for x in rows)
                         for k in ("ready_s", "idle_mib", "after_answer_mib", "anon_mib", "file_mib")}
            lines.append(f"| {mode} | {side} | {med[side]['ready_s']:.2f} | {med[side]['idle_mib']:.0f} | "
                         f"{med[side]['anon_mib']:.0f} / {med[side]['file_mib']:.0f} | "
                         f"{med[side]['after_answer_mib']:.0f} | {'yes' if any(x['torch'] for x in rows) else 'no'} |")
        ratio = {k: med["after"][k] / med["before"][k] for k in med["after"]}
        lines.append(f"| {mode} | ratio after/before | {ratio['ready_s']:.2f} | {ratio['idle_mib']:.2f} | "
                     f"{ratio['anon_mib']:.2f} / {ratio['file_mib']:.2f} | {ratio['after_answer_mib']:.2f} | |")
    if args.clients:
        lines += ["", f"`/api/v1/search` with {args.clients} concurrent clients ({args.per_client} searches each per "
                  "round, extractive server, pooled over rounds). Goal (issue 12): p50 <= 60 ms.", "",
                  "| side | searches | p50 ms | p95 ms | max ms | server CPU ms per search |",
                  "|---|---|---|---|---|---|"]
        p50, cpu = {}, {}
        for side in trees:
            rows = results[(side, "extractive")]
            ms = sorted(x for row in rows for x in row["search_ms"])
            p50[side], cpu[side] = statistics.median(ms), statistics.median(r["server_cpu_ms"] for r in rows)
            lines.append(f"| {side} | {len(ms)} | {p50[side]:.0f} | {ms[int(0.95 * (len(ms) - 1))]:.0f} | "
                         f"{ms[-1]:.0f} | {cpu[side]:.1f} |")
        lines.append(f"| ratio after/before | | {p50['after'] / p50['before']:.2f} | | | "
                     f"{cpu['after'] / cpu['before']:.2f} |")
        lines += ["", "The clients run in this process on the same cores as the server (httpx, about 6-8 ms of "
                  "CPU per search on this box), so the p50 here is bounded by both."]
    if args.ingest:
        lines += ["", f"`manualqa ingest {args.ingest.name}/` into an empty data directory, whole CLI process "
                  "(start-up, parse, chunk, embed, write, verify, activate). Goal (issue 12): throughput >= 2x.", "",
                  "Both trees parse the same pages; their chunkers may cut them into different numbers of "
                  "passages, so throughput is compared per page of PDF (chunks/s is shown too).", "",
                  "| side | pages | chunks embedded | wall s (median) | runs | pages/s | chunks/s |",
                  "|---|---|---|---|---|---|---|"]
        pages_s, chunks_s = {}, {}
        for side in trees:
            rows = results[(side, "ingest")]
            wall = statistics.median(r["wall_s"] for r in rows)
            pages_s[side], chunks_s[side] = rows[0]["pages"] / wall, rows[0]["chunks"] / wall
            lines.append(f"| {side} | {rows[0]['pages']} | {rows[0]['chunks']} | {wall:.1f} | "
                         f"{_runs(rows)} | {pages_s[side]:.2f} | {chunks_s[side]:.1f} |")
        lines.append(f"| ratio after/before (throughput) | | | | | {pages_s['after'] / pages_s['before']:.2f} | "
                     f"{chunks_s['after'] / chunks_s['before']:.2f} |")
    lines += ["", machine_markdown(), ""]
    text = "\n".join(lines)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(text)


def _runs(rows: list[dict[str, Any]]) -> str:
    return ", ".join(f"{r['wall_s']:.1f}" for r in rows)


def _rev(tree: Path) -> str:
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=tree, capture_output=True, text=True)
    return out.stdout.strip() or str(tree)


if __name__ == "__main__":
    main()
