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

    python -m bench.suite.startup [--before REV|DIR] [--after DIR] [--rounds 3] [--ingest DIR...]

--before defaults to 6c58218, the last commit with the torch embedder as the default (the "earlier
releases" the README compares with), checked out into a temporary git worktree; --ingest defaults to
the 10 eval manuals (eval/dev/manuals and eval/test/manuals; `--ingest` alone: no ingest timing).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from bench.harness import REPO, Server, cpu_seconds, git, rss_mib, source_tree, tree_env, write_section

BEFORE = "6c58218"  # the torch embedder's last default
EVAL_MANUALS = [REPO / "eval" / "dev" / "manuals", REPO / "eval" / "test" / "manuals"]
QUESTION = "What input voltage range does the piston board accept?"
QUESTIONS = [json.loads(line)["question"] for line in
             (REPO / "sample_manuals" / "questions.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]


def _env(tree: Path, data: Path, mode: str) -> dict[str, str]:
    return tree_env(data, tree=tree, extra={"MANUALQA_ANSWER__MODE": mode})


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


def timed_ingest(tree: Path, corpus: list[Path]) -> dict[str, Any]:
    """One `manualqa ingest` CLI run into an empty data directory: seconds, pages and chunks."""
    with tempfile.TemporaryDirectory(prefix="manualqa-ingest-") as data:
        t0 = time.perf_counter()
        out = subprocess.run([sys.executable, "-m", "gateway", "ingest", *map(str, corpus), "--json"], cwd=tree,
                             env=_env(tree, Path(data), "extractive"), check=True, capture_output=True, text=True)
        wall = time.perf_counter() - t0
    report = json.loads(out.stdout)
    return {"wall_s": wall, "pages": report["pages"], "chunks": report["embedded"]}


def cold_start(tree: Path, data: Path, mode: str, clients: int = 0, per_client: int = 0) -> dict[str, Any]:
    with Server(_env(tree, data, mode), tree=tree) as server:
        ready_s = server.start(timeout_s=600, poll_s=0.02).ready_s
        pid = server.pid
        idle = rss_mib(pid)
        anon, mapped = rss_mib(pid, "RssAnon"), rss_mib(pid, "RssFile")
        httpx.post(f"{server.url}/api/v1/ask", json={"question": QUESTION, "mode": "extractive"},
                   timeout=120).raise_for_status()
        after_answer = rss_mib(pid)
        cpu0 = cpu_seconds(pid)
        searches = concurrent_searches(server.port, clients, per_client) if clients else []
        server_cpu_ms = (cpu_seconds(pid) - cpu0) * 1000 / max(1, len(searches))
        return {"ready_s": ready_s, "idle_mib": idle, "after_answer_mib": after_answer, "anon_mib": anon,
                "file_mib": mapped, "torch": _has_torch(pid), "search_ms": searches,
                "server_cpu_ms": server_cpu_ms}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", default=BEFORE, help=f"source tree or git revision of the old code ({BEFORE})")
    ap.add_argument("--after", type=Path, default=REPO, help="source tree of the new code")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--clients", type=int, default=16, help="concurrent search clients (0: none)")
    ap.add_argument("--per-client", type=int, default=8, help="searches per client and round")
    ap.add_argument("--ingest", type=Path, nargs="*", default=EVAL_MANUALS,
                    help="folders of PDFs each tree ingests per round (default: the 10 eval manuals)")
    ap.add_argument("--out", type=Path, default=None, help="the Markdown file to write (default: its section)")
    args = ap.parse_args()
    with source_tree(args.before) as before, tempfile.TemporaryDirectory(prefix="manualqa-startup-") as tmp:
        trees = {"before": before, "after": args.after.resolve()}
        results = measure(args, trees, Path(tmp))
        text = report(args, trees, results)
    write_section(__spec__.name, text, out=args.out)
    print(text)


def measure(args: argparse.Namespace, trees: dict[str, Path],
            tmp: Path) -> dict[tuple[str, str], list[dict[str, Any]]]:
    results: dict[tuple[str, str], list[dict[str, Any]]] = {}
    data = {side: Path(tmp) / side for side in trees}
    for side, tree in trees.items():
        subprocess.run([sys.executable, "-m", "gateway", "ingest", str(REPO / "sample_manuals")], cwd=tree,
                       env=_env(tree, data[side], "extractive"), check=True, capture_output=True)
    for r in range(args.rounds):
        order = list(trees) if r % 2 == 0 else list(reversed(trees))
        for side in order:
            for mode in ("extractive", "generate"):
                clients = args.clients if mode == "extractive" else 0
                results.setdefault((side, mode), []).append(
                    cold_start(trees[side], data[side], mode, clients, args.per_client))
            if args.ingest:
                results.setdefault((side, "ingest"), []).append(timed_ingest(trees[side], args.ingest))
    return results


def report(args: argparse.Namespace, trees: dict[str, Path],
           results: dict[tuple[str, str], list[dict[str, Any]]]) -> str:
    lines = ["## Cold start and idle memory of `manualqa serve` (bench/suite/startup.py)", "",
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
        names = " ".join(f"{p.name}/" for p in args.ingest)
        lines += ["", f"`manualqa ingest {names}` into an empty data directory, whole CLI process "
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
    return "\n".join(lines)


def _runs(rows: list[dict[str, Any]]) -> str:
    return ", ".join(f"{r['wall_s']:.1f}" for r in rows)


def _rev(tree: Path) -> str:
    return git(tree, "rev-parse", "--short", "HEAD") or str(tree)


if __name__ == "__main__":
    main()
