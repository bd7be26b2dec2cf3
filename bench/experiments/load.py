"""Load on a real gateway: two source trees side by side in one run (before / after a change).

For each tree, with that tree's own code (cwd = tree, PYTHONPATH = tree, the same interpreter):
  1. `python -m gateway ingest sample_manuals` into a fresh data directory;
  2. `python -m gateway serve` on a free loopback port with the default configuration (the default
     generation model: the embedded SmolLM2 profile) except `server.rate_limit_per_minute = 100000`,
     so that the rate limiter does not interfere; wait for 200 from /api/v1/health;
  3. N concurrent clients (threads, each with its own keep-alive connection, loopback only) send
     requests back to back for S seconds; client i sends only kind i mod 3 of
       extractive  POST /api/v1/ask {"mode": "extractive"}
       generate    POST /api/v1/ask {"mode": "generate"}
       search      POST /api/v1/search
     so that each kind's throughput is its own, not bounded by the slowest kind's latency; questions
     from sample_manuals/questions.jsonl (the same list for both trees). After a 503 a client waits
     as the server's Retry-After says, at most --max-backoff seconds (0: no pause, pure saturation).
     A request started before the deadline may finish after it (each has its own timeout), so a run
     lasts at most S + --request-timeout seconds;
  4. the server is stopped (always: also on errors and Ctrl-C).
Per kind: requests, status counts (200 / 503 / other), errors (timeouts, connection errors, a 200
whose body is not the expected JSON), p50 / p95 / max latency of the 200s, 200s per second of the
window, and the answer outcomes. The trees run one after the other (`--rounds 2` runs before,
after, after, before), never at the same time; the report gives after / before ratios, since
absolute figures on a shared 2-core box move with its load.

    python -m bench.experiments.load --before /tmp/mqa-before --after . --clients 32 --seconds 60
    python -m bench.experiments.load --before /tmp/mqa-before --after . --quick   # smoke: 4 clients, 10 s

Writes docs/bench/experiments/load.md (or --out). A benchmark, not a test: nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import atexit
import datetime as dt
import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.harness import REPO as ROOT
from bench.harness import Server, load_avg, proc_mib, revision, tree_env, write_section
from bench.suite.retrieval_quality import load_questions as read_question_rows
from gateway.qa.metrics import percentile

# the percentile convention the published load figures were measured with (see percentile)
pct = functools.partial(percentile, method="nearest")

OUT = ROOT / "docs" / "bench" / "experiments" / "load.md"
QUESTIONS = ROOT / "sample_manuals" / "questions.jsonl"
KINDS = ("extractive", "generate", "search")
RATE_LIMIT = 100000
SIDES = ("before", "after")


# -- one tree: ingest and serve ----------------------------------------------------------------------
class Tree:
    """A source tree with its own data directory, config and (while running) server process."""

    def __init__(self, side: str, path: Path, workdir: Path) -> None:
        self.side = side
        self.path = path.resolve()
        self.workdir = workdir / side
        self.workdir.mkdir(parents=True)
        self.data = self.workdir / "data"
        self.config = self.workdir / "manualqa.toml"
        self.config.write_text(f"[server]\nrate_limit_per_minute = {RATE_LIMIT}\n", encoding="utf-8")
        self.env = tree_env(self.data, self.config, self.path, clean=True)
        self.revision = revision(self.path)
        self.server: Server | None = None
        self.url = ""
        self.log = self.workdir / "server.log"

    @property
    def proc(self) -> subprocess.Popen[bytes] | None:
        return self.server.proc if self.server else None

    def check_code(self) -> str:
        """Fail unless `import gateway` in this tree's environment loads this tree's gateway package."""
        code = "import gateway, ingest, retrieval, runtimes; print(gateway.__file__)"
        out = subprocess.run([sys.executable, "-c", code], cwd=self.path, env=self.env, capture_output=True,
                             text=True, timeout=120)
        where = Path(out.stdout.strip()).resolve() if out.returncode == 0 else None
        if where is None or self.path not in where.parents:
            raise SystemExit(f"{self.side}: `import gateway` does not load {self.path}: "
                             f"{out.stdout.strip() or out.stderr.strip()[-1000:]}")
        return str(where)

    def ingest(self, timeout_s: float) -> float:
        t0 = time.perf_counter()
        try:
            out = subprocess.run([sys.executable, "-m", "gateway", "ingest", "sample_manuals"], cwd=self.path,
                                 env=self.env, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired as exc:
            raise SystemExit(f"{self.side}: ingest took over {timeout_s:.0f} s") from exc
        if out.returncode != 0 or not (self.data / "ACTIVE").is_file():
            raise SystemExit(f"{self.side}: ingest failed ({out.returncode}):\n{(out.stdout + out.stderr)[-3000:]}")
        return time.perf_counter() - t0

    def start(self, timeout_s: float) -> float:
        """Start the server; seconds from spawn to the first 200 from /api/v1/health."""
        self.server = Server(self.env, tree=self.path, log=self.log, append=True)
        self.url = self.server.url
        _RUNNING.add(self)
        try:
            return self.server.start(timeout_s, poll_s=0.2).ready_s
        except RuntimeError as exc:
            raise SystemExit(f"{self.side}: {exc}") from exc

    def alive(self) -> bool:
        return self.server is not None and self.server.alive()

    def log_tail(self, n: int = 3000) -> str:
        try:
            return self.log.read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def stop(self) -> None:
        """Stop the server (SIGTERM to its process group, then SIGKILL); safe to call more than once."""
        server, self.server = self.server, None
        _RUNNING.discard(self)
        if server is not None:
            server.stop(timeout_s=20)


_RUNNING: set[Tree] = set()


def _stop_all() -> None:
    for tree in list(_RUNNING):
        tree.stop()


def _on_signal(signum: int, _frame: Any) -> None:
    raise SystemExit(f"interrupted by signal {signum}")


# -- the load ------------------------------------------------------------------------------------------
@dataclass
class KindStats:
    requests: int = 0
    status: Counter = field(default_factory=Counter)
    errors: Counter = field(default_factory=Counter)
    latency_ms: list[float] = field(default_factory=list)  # of the 200s
    outcomes: Counter = field(default_factory=Counter)
    ok_in_window: int = 0  # 200s whose response was complete before the deadline

    def merge(self, other: KindStats) -> None:
        self.requests += other.requests
        self.status.update(other.status)
        self.errors.update(other.errors)
        self.latency_ms.extend(other.latency_ms)
        self.outcomes.update(other.outcomes)
        self.ok_in_window += other.ok_in_window

    @property
    def ok(self) -> int:
        return self.status.get(200, 0)

    @property
    def busy(self) -> int:
        return self.status.get(503, 0)

    @property
    def other(self) -> int:
        return sum(n for code, n in self.status.items() if code not in (200, 503))


@dataclass
class RunResult:
    side: str
    round: int
    clients: int
    seconds: float
    wall_s: float = 0.0
    startup_s: float = 0.0
    kinds: dict[str, KindStats] = field(default_factory=lambda: {k: KindStats() for k in KINDS})
    alive_after: bool = True
    health_after: int | str = ""
    rss: dict[str, float] = field(default_factory=dict)
    load_before: str = ""
    load_after: str = ""
    stragglers: int = 0


def request_of(kind: str, question: str) -> tuple[str, dict[str, Any]]:
    if kind == "search":
        return "/api/v1/search", {"query": question}
    return "/api/v1/ask", {"question": question, "mode": kind}


def check_body(kind: str, body: Any) -> str | None:
    """An error label when a 200's body is not what that kind returns; None when it is."""
    if not isinstance(body, dict):
        return "bad_body"
    if kind == "search":
        return None if isinstance(body.get("hits"), list) else "bad_body"
    if not body.get("outcome"):
        return "bad_body"
    # an extractive ask must not be generated; a generate ask may end extractively (evidence_only,
    # not_found, runtime not loaded), so only the extractive side is checked
    if kind == "extractive" and body.get("mode") not in (None, "extractive"):
        return "wrong_mode"
    return None


def retry_after_s(response: Any, cap: float) -> float:
    """The pause a 503/429 asks for (Retry-After in seconds; 1 s if absent or odd), at most cap."""
    try:
        wanted = float(response.headers.get("retry-after", "1"))
    except ValueError:
        wanted = 1.0
    return max(0.0, min(cap, wanted))


def client_loop(index: int, url: str, questions: list[str], deadline: float, timeout_s: float,
                max_backoff: float, stop: threading.Event, out: dict[str, KindStats]) -> None:
    import httpx

    n = 0
    kind = KINDS[index % len(KINDS)]
    timeout = httpx.Timeout(timeout_s, connect=10.0)
    with httpx.Client(base_url=url, timeout=timeout, trust_env=False) as client:
        while time.monotonic() < deadline and not stop.is_set():
            question = questions[(index * 7 + n) % len(questions)]
            n += 1
            path, payload = request_of(kind, question)
            stats = out[kind]
            stats.requests += 1
            t0 = time.perf_counter()
            try:
                r = client.post(path, json=payload)
                body = r.content
            except httpx.TimeoutException:
                stats.errors["timeout"] += 1
                continue
            except httpx.HTTPError as exc:
                stats.errors[type(exc).__name__] += 1
                if stop.is_set():
                    return
                time.sleep(0.5)  # the server may be gone: do not spin
                continue
            ms = (time.perf_counter() - t0) * 1000
            stats.status[r.status_code] += 1
            if r.status_code in (429, 503) and max_backoff > 0:
                stop.wait(min(retry_after_s(r, max_backoff), max(0.0, deadline - time.monotonic())))
            if r.status_code != 200:
                continue
            try:
                data = json.loads(body)
            except ValueError:
                stats.errors["bad_json"] += 1
                continue
            problem = check_body(kind, data)
            if problem:
                stats.errors[problem] += 1
                continue
            stats.latency_ms.append(ms)
            stats.ok_in_window += time.monotonic() <= deadline
            if kind != "search":
                stats.outcomes[str(data.get("outcome"))] += 1


def warm_up(url: str, questions: list[str], timeout_s: float) -> None:
    """One request of each kind, not counted (a short generation): the first answer pays for lazy set-up."""
    import httpx

    with httpx.Client(base_url=url, timeout=timeout_s, trust_env=False) as client:
        for i, kind in enumerate(KINDS):
            path, payload = request_of(kind, questions[i % len(questions)])
            if kind == "generate":
                payload["max_tokens"] = 16  # enough to run the model once, without a long wait
            try:
                client.post(path, json=payload)
            except httpx.HTTPError:
                pass


def run_load(tree: Tree, round_no: int, questions: list[str], args: argparse.Namespace) -> RunResult:
    import httpx

    result = RunResult(tree.side, round_no, args.clients, args.seconds)
    try:
        result.startup_s = tree.start(args.start_timeout)
        warm_up(tree.url, questions, args.request_timeout)
        result.load_before = load_avg()
        stop = threading.Event()
        per_client = [{k: KindStats() for k in KINDS} for _ in range(args.clients)]
        t0 = time.monotonic()
        deadline = t0 + args.seconds
        threads = [threading.Thread(target=client_loop, daemon=True, name=f"load-client-{i}",
                                    args=(i, tree.url, questions, deadline, args.request_timeout, args.max_backoff,
                                          stop, per_client[i]))
                   for i in range(args.clients)]
        for t in threads:
            t.start()
        hard_end = deadline + args.request_timeout + 30
        for t in threads:
            t.join(timeout=max(0.0, hard_end - time.monotonic()))
        stop.set()
        result.stragglers = sum(t.is_alive() for t in threads)
        result.wall_s = time.monotonic() - t0
        result.load_after = load_avg()
        for stats in per_client:
            for kind in KINDS:
                result.kinds[kind].merge(stats[kind])
        result.alive_after = tree.alive()
        if tree.proc is not None:
            result.rss = proc_mib(tree.proc.pid)
        try:
            result.health_after = httpx.get(tree.url + "/api/v1/health", timeout=10).status_code
        except httpx.HTTPError as exc:
            result.health_after = type(exc).__name__
    finally:
        tree.stop()
    return result


# -- the report ----------------------------------------------------------------------------------------
def merged(results: list[RunResult], side: str) -> dict[str, KindStats]:
    out = {k: KindStats() for k in KINDS}
    for r in results:
        if r.side == side:
            for kind in KINDS:
                out[kind].merge(r.kinds[kind])
    return out


def kind_split(clients: int) -> str:
    return ", ".join(f"{kind} {len(range(i, clients, len(KINDS)))}" for i, kind in enumerate(KINDS))


def fmt_ms(v: float | None) -> str:
    return "–" if v is None else f"{v:.0f}"


def fmt_ratio(a: float | None, b: float | None) -> str:
    if a is None or b is None:
        return "–"
    if b == 0:
        return "–" if a == 0 else "∞ (before 0)"
    return f"{a / b:.3g}"


def side_table(stats: dict[str, KindStats], window_s: float) -> list[str]:
    """window_s: the load windows of the runs added up (the tail after each deadline is not counted)."""
    rows = ["| kind | requests | 200 | 503 | other status | errors | p50 of 200s (ms) | p95 of 200s (ms) | "
            "max (ms) | 200s per s in the window | outcomes of the 200s |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for kind in KINDS:
        s = stats[kind]
        other = ", ".join(f"{c}: {n}" for c, n in sorted(s.status.items()) if c not in (200, 503)) or "0"
        errors = ", ".join(f"{e}: {n}" for e, n in sorted(s.errors.items())) or "0"
        outcomes = ", ".join(f"{o} {n}" for o, n in sorted(s.outcomes.items())) or "–"
        rows.append(f"| {kind} | {s.requests} | {s.ok} | {s.busy} | {other} | {errors} | "
                    f"{fmt_ms(pct(s.latency_ms, 50))} | {fmt_ms(pct(s.latency_ms, 95))} | "
                    f"{fmt_ms(max(s.latency_ms) if s.latency_ms else None)} | "
                    f"{s.ok_in_window / window_s:.2f} | {outcomes if kind != 'search' else '–'} |")
    return rows


def ratio_table(before: dict[str, KindStats], after: dict[str, KindStats]) -> list[str]:
    rows = ["| kind | 200s before → after | 200s after / before | share 503 before → after | "
            "p50 after / before | p95 after / before | errors before → after |",
            "|---|---|---:|---|---:|---:|---|"]
    for kind in KINDS:
        b, a = before[kind], after[kind]
        share = (f"{b.busy / b.requests:.0%}" if b.requests else "–") + " → " + \
                (f"{a.busy / a.requests:.0%}" if a.requests else "–")
        rows.append(f"| {kind} | {b.ok} → {a.ok} | {fmt_ratio(a.ok, b.ok)} | {share} | "
                    f"{fmt_ratio(pct(a.latency_ms, 50), pct(b.latency_ms, 50))} | "
                    f"{fmt_ratio(pct(a.latency_ms, 95), pct(b.latency_ms, 95))} | "
                    f"{sum(b.errors.values())} → {sum(a.errors.values())} |")
    return rows


def headline(before: dict[str, KindStats], after: dict[str, KindStats]) -> list[str]:
    lines = []
    for kind in KINDS:
        b, a = before[kind], after[kind]
        lines.append(f"- {kind}: 200s {b.ok} of {b.requests} → {a.ok} of {a.requests} "
                     f"(503s {b.busy} → {a.busy}); p50 of the 200s {fmt_ms(pct(b.latency_ms, 50))} → "
                     f"{fmt_ms(pct(a.latency_ms, 50))} ms (after / before "
                     f"{fmt_ratio(pct(a.latency_ms, 50), pct(b.latency_ms, 50))})")
    return lines


SMOKE_NOTE = ("> **Smoke run** (`--quick`: {clients} clients, {seconds:g} s): it shows that the script works end to "
              "end on both trees, **not** a measurement; do not quote these figures. The figures to read come from "
              "`--clients 32 --seconds 60`.")


def render(args: argparse.Namespace, trees: dict[str, Tree], results: list[RunResult], ingest_s: dict[str, float],
           started: str) -> str:
    before, after = merged(results, "before"), merged(results, "after")
    window = {side: sum(r.seconds for r in results if r.side == side) or 1.0 for side in SIDES}
    lines = ["## Load: concurrent clients, before vs after", ""]
    if args.quick:
        lines += [SMOKE_NOTE.format(clients=args.clients, seconds=args.seconds), ""]
    lines += [
        *headline(before, after),
        "",
        f"Niceness {os.nice(0)} (inherited by the servers); "
        f"shared with other jobs while measured (expect noise: read the ratios). Started {started}; "
        f"load average at the start of each run: "
        + "; ".join(f"{r.side} {r.load_before}" for r in results) + ".",
        "",
        f"Trees: before = {trees['before'].revision} ({trees['before'].path}); "
        f"after = {trees['after'].revision} ({trees['after'].path}). Each was ingested "
        f"(`python -m gateway ingest sample_manuals`, before {ingest_s['before']:.0f} s, after "
        f"{ingest_s['after']:.0f} s) and served (`python -m gateway serve`) with its own code on its own fresh "
        f"data directory, with the default configuration (default generation profile: the embedded "
        f"SmolLM2-135M-Instruct Q4_1 on llama.cpp; server.queue_size 8) except "
        f"`server.rate_limit_per_minute = {RATE_LIMIT}`. The trees ran one after the other, never together "
        f"(order: {', '.join(r.side for r in results)}).",
        "",
        f"Load: {args.clients} concurrent clients (threads, one keep-alive connection each, loopback) for "
        f"{args.seconds:g} s per run; client i sends only kind i mod 3 ({kind_split(args.clients)}: "
        f"`POST /api/v1/ask` with `\"mode\": \"extractive\"`, the same with `\"mode\": \"generate\"`, "
        f"`POST /api/v1/search`), back to back, with the {len(load_questions(args.questions))} questions of "
        f"`{display_path(args.questions)}` (answerable and unanswerable). "
        + (f"After a 503 a client pauses as the server's `Retry-After` says, at most {args.max_backoff:g} s. "
           if args.max_backoff > 0 else "No pause after a 503 (`--max-backoff 0`). ")
        + f"Requests started before the deadline "
        f"were allowed to finish (timeout {args.request_timeout:g} s each). Latency is measured at the client, "
        f"request sent -> full response read; percentiles are of the 200s only. \"errors\" are timeouts, "
        f"connection errors and 200s whose body was not the expected JSON. One warm-up request of each kind "
        f"before each run is not counted.",
        "",
        "### after / before",
        "",
        *ratio_table(before, after),
        "",
        *headline(before, after),
        "",
    ]
    for side in SIDES:
        runs = [r for r in results if r.side == side]
        lines += [f"### {side}: {trees[side].revision}", "",
                  *side_table(merged(results, side), window[side]), ""]
        for r in runs:
            rss = ", ".join(f"{k} {v:.0f} MiB" for k, v in r.rss.items()) or "n/a"
            lines.append(f"- run {r.round}: spawn -> healthy {r.startup_s:.1f} s; wall {r.wall_s:.1f} s "
                         f"(the window plus the requests still in flight at its end); server alive afterwards: "
                         f"{'yes' if r.alive_after else 'NO'}, /api/v1/health {r.health_after}; server {rss}; "
                         f"load average {r.load_before} -> {r.load_after}"
                         + (f"; {r.stragglers} client(s) still running at the hard stop" if r.stragglers else ""))
        lines.append("")
    lines += ["\"200s per s in the window\" counts the 200s complete before the deadline; the other columns also "
              "count the requests that were in flight at the deadline and finished after it. A generate ask may end "
              "without the model (`not_found`, or `evidence_only` when nothing the model wrote was backed by the "
              "passages).", ""]
    return "\n".join(lines)


def display_path(p: Path) -> str:
    try:
        return str(p.resolve().relative_to(ROOT))
    except ValueError:
        return str(p)


def load_questions(path: Path) -> list[str]:
    """The question texts of a questions.jsonl file (read by bench.suite.retrieval_quality.load_questions)."""
    out = [q for row in read_question_rows(path) if (q := row.get("question", "").strip())]
    if not out:
        raise SystemExit(f"no questions in {path}")
    return out


# -- main ------------------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", type=Path, required=True, help="source tree before the change")
    parser.add_argument("--after", type=Path, required=True, help="source tree after the change (e.g. .)")
    parser.add_argument("--clients", type=int, default=32, help="concurrent clients (default 32)")
    parser.add_argument("--seconds", type=float, default=60.0, help="load window per run (default 60)")
    parser.add_argument("--quick", action="store_true", help="smoke run: 4 clients, 10 s, marked as such")
    parser.add_argument("--rounds", type=int, default=1,
                        help="runs per tree, in the order before, after, after, before, ... (default 1)")
    parser.add_argument("--request-timeout", type=float, default=180.0, help="per request, seconds (default 180)")
    parser.add_argument("--max-backoff", type=float, default=5.0,
                        help="longest pause after a 503, honouring Retry-After; 0 = none (default 5)")
    parser.add_argument("--start-timeout", type=float, default=300.0, help="server start, seconds (default 300)")
    parser.add_argument("--ingest-timeout", type=float, default=1200.0, help="ingest, seconds (default 1200)")
    parser.add_argument("--questions", type=Path, default=QUESTIONS, help="questions JSONL (default: sample set)")
    parser.add_argument("--out", type=Path, default=OUT, help="report (default docs/bench/experiments/load.md)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary data directories and logs")
    args = parser.parse_args(argv)
    if args.quick:
        args.clients, args.seconds = 4, 10.0
    if not 1 <= args.clients <= 256:
        parser.error("--clients must be between 1 and 256")
    if not 0 < args.seconds <= 3600:
        parser.error("--seconds must be in (0, 3600]")
    if not 1 <= args.rounds <= 10:
        parser.error("--rounds must be between 1 and 10")
    for side in SIDES:
        tree = getattr(args, side)
        if not (tree / "gateway" / "__main__.py").is_file() or not (tree / "sample_manuals").is_dir():
            parser.error(f"--{side} {tree}: not a manualqa source tree (gateway/, sample_manuals/)")
    questions = load_questions(args.questions)

    atexit.register(_stop_all)
    signal.signal(signal.SIGTERM, _on_signal)
    workdir = Path(tempfile.mkdtemp(prefix="mqa-load-"))
    started = dt.datetime.now().strftime("%Y-%m-%d %H:%M")
    results: list[RunResult] = []
    try:
        trees = {side: Tree(side, getattr(args, side), workdir) for side in SIDES}
        ingest_s = {}
        for side, tree in trees.items():
            where = tree.check_code()
            print(f"[{side}] {tree.revision}: gateway from {where}; ingesting sample_manuals ...", flush=True)
            ingest_s[side] = tree.ingest(args.ingest_timeout)
            print(f"[{side}] ingested in {ingest_s[side]:.0f} s", flush=True)
        order = [SIDES[(i + (i // 2)) % 2] for i in range(2 * args.rounds)]  # before after after before ...
        for i, side in enumerate(order):
            round_no = i // 2 + 1
            print(f"[{side}] run {round_no}: {args.clients} clients x {args.seconds:g} s ...", flush=True)
            r = run_load(trees[side], round_no, questions, args)
            results.append(r)
            for kind in KINDS:
                s = r.kinds[kind]
                print(f"[{side}]   {kind:10s} requests {s.requests:5d}  200 {s.ok:5d}  503 {s.busy:5d}  "
                      f"other {s.other:3d}  errors {sum(s.errors.values()):3d}  "
                      f"p50 {fmt_ms(pct(s.latency_ms, 50))} ms  p95 {fmt_ms(pct(s.latency_ms, 95))} ms", flush=True)
            if not r.alive_after:
                print(f"[{side}] the server died under load:\n{trees[side].log_tail()}", file=sys.stderr)
        report = render(args, trees, results, ingest_s, started)
        print(f"wrote {write_section(__spec__.name, report, out=args.out, argv=argv)}")
    finally:
        _stop_all()
        if args.keep:
            print(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0 if all(r.alive_after for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
