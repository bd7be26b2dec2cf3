"""The gateway server under measurement: streaming overhead, search under load, cold start and RSS.

(a) Streaming, three sides, interleaved round by round (rotating who goes first), same model
    (the default profile: SmolLM2-135M Q4_1 on llama.cpp), same threads, same n_ctx, same
    generation settings and the same chat messages:
    - gateway: POST /api/v1/ask with stream=true (SSE) on a real `python -m gateway serve`;
    - direct:  the runtime (runtimes.registry.create_runtime with the default profile) called in a
               worker process, with the messages the gateway's pipeline builds for that question
               (same retrieval, same gateway.answer.prompting.fit_prompt, same GenerationConfig);
    - llama-server: `python -m llama_cpp.server` streaming /v1/chat/completions with those messages.
    One harness measures all three at the client: TTFT = request start -> first non-empty piece;
    decode tokens/s = (pieces - 1) / (last piece - first piece). The gateway's client TTFT includes
    retrieval (embedding the question + search), which the other two do not do; the like-for-like
    figure is the gateway's generation part: client TTFT minus the retrieval_ms its final event
    reports (what remains: HTTP, prompt fitting, queue, thread relay, the runtime's own TTFT, SSE).
(b) /api/v1/search p50/p95 with 16 concurrent clients (threads, loopback) while generations run
    back to back, and the same with the generator idle.
(c) Cold start: spawn -> first 200 from /api/v1/health (index, embedder and model loaded);
    VmRSS / VmHWM of the server process when idle, and after answering.

    python -m bench.suite.server [--rounds 6] [--max-tokens 96] [--out FILE]   # docs/bench/server.md
"""

from __future__ import annotations

import argparse
import functools
import importlib.metadata
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.harness import REPO as ROOT
from bench.harness import Server as HarnessServer
from bench.harness import free_port, proc_mib, timed, tree_env, write_section
from gateway.qa.metrics import percentile

# the percentile convention the published server figures were measured with (see percentile)
pct = functools.partial(percentile, method="nearest")

ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
SIDES = ("gateway", "direct", "llama-server")


# -- helpers ------------------------------------------------------------------------------------
def sse(response: Any) -> Iterator[tuple[str, str]]:
    """(event, data) pairs from an httpx streaming response."""
    event, data = "message", []
    for line in response.iter_lines():
        if not line:
            if data:
                yield event, "\n".join(data)
            event, data = "message", []
        elif line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].lstrip())


# -- the gateway server -------------------------------------------------------------------------
def write_config(workdir: Path, profile: Path | None) -> Path:
    """The gateway's config for the bench: no rate limit, generate mode; the chosen profile (default: the
    built-in)."""
    cfg = workdir / "manualqa.toml"
    text = f'[runtime]\nprofile = "{profile.resolve()}"\n' if profile else ""
    # generate mode: the profile need not have passed doctor's gate 4 (auto would answer extractively)
    cfg.write_text(text + '[answer]\nmode = "generate"\n[server]\nrate_limit_per_minute = 100000\n',
                   encoding="utf-8")
    return cfg


def Server(data: Path, workdir: Path) -> HarnessServer:  # noqa: N802 - builds the harness's Server
    """The gateway on `data` with the bench's config (write_config), logging into workdir."""
    env = tree_env(data, workdir / "manualqa.toml")
    return HarnessServer(env, log=workdir / "server.log")


def ask_stream(url: str, question: str, max_tokens: int) -> dict[str, Any]:
    import httpx

    final: dict[str, Any] = {}

    def pieces() -> Iterator[str]:
        with httpx.stream("POST", url + "/api/v1/ask", timeout=300,
                          json={"question": question, "stream": True, "max_tokens": max_tokens}) as r:
            r.raise_for_status()
            for event, data in sse(r):
                if event == "token":
                    yield json.loads(data)["text"]
                elif event == "final":
                    final.update(json.loads(data))

    out = timed(pieces())
    out["final"] = final
    return out


# -- the direct side: a worker process holding the runtime ------------------------------------
def worker(data: str) -> None:
    """stdin: {"question", "max_tokens"} per line; stdout: the messages, then the timed stream."""
    os.environ["MANUALQA_DATA"] = data
    from gateway.answer.generation import prepare
    from gateway.answer.pipeline import retrieve_for_answer
    from gateway.config import load_settings
    from gateway.services import Services
    from runtimes.base import GenerationStats

    gw = Services(load_settings())
    runtime = gw.runtime  # the default profile through runtimes.registry.create_runtime
    print(json.dumps({"ready": True, "n_threads": getattr(runtime, "n_threads", None),
                      "n_threads_batch": getattr(runtime, "n_threads_batch", None),
                      "n_batch": getattr(runtime, "n_batch", 512),
                      "profile": gw.profile.name,
                      "n_ctx": runtime.context_length}), flush=True)
    for line in sys.stdin:
        req = json.loads(line)
        hits = retrieve_for_answer(gw.answer_deps(), req["question"], None, None).hits
        given = hits[: gw.settings.answer.max_passages]
        config = gw.profile.generation_config()  # as the pipeline sets it: passages, excerpts, citation grammar
        plan = prepare(config, runtime, gw.settings.answer, req["question"], given, req["max_tokens"])
        print(json.dumps({"messages": plan.messages, "config": config.to_dict()}), flush=True)
        if sys.stdin.readline().strip() != "go":
            return
        stats: list[Any] = []

        def pieces(messages: list[dict[str, str]], config: Any, stats: list[Any]) -> Iterator[str]:
            for item in runtime.stream(messages, config):
                if isinstance(item, GenerationStats):
                    stats.append(item)
                else:
                    yield item

        out = timed(pieces(plan.messages, config, stats))
        out["prompt_tokens"] = stats[0].prompt_tokens if stats else None
        print(json.dumps(out), flush=True)


class Direct:
    def __init__(self, data: Path) -> None:
        env = {**ENV, "MANUALQA_CONFIG": str(data.parent / "manualqa.toml")}
        self.proc = subprocess.Popen([sys.executable, "-m", __spec__.name, "--worker", str(data)], cwd=ROOT,
                                     env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.info = self._read()

    def _read(self) -> dict[str, Any]:
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit("direct worker died")
        return json.loads(line)

    def prepare(self, question: str, max_tokens: int) -> dict[str, Any]:
        self.proc.stdin.write(json.dumps({"question": question, "max_tokens": max_tokens}) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def run(self) -> dict[str, Any]:
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()
        return self._read()

    def stop(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


# -- llama-cpp-python's own server ----------------------------------------------------------------
class LlamaServer:
    def __init__(self, info: dict[str, Any], workdir: Path) -> None:
        """Started with the runtime's own settings. Its defaults differ in two ways that matter:
        logits_all=True (logits for every prompt token: a much slower prompt) and n_threads_batch =
        all cores; both are set to what the gateway's runtime uses, to compare like with like."""
        from runtimes.defaults import default_gguf_path

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = workdir / "llama-server.log"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(default_gguf_path()), "--host",
             "127.0.0.1", "--port", str(self.port), "--n_ctx", str(info["n_ctx"]),
             "--n_threads", str(info["n_threads"]), "--n_threads_batch", str(info["n_threads_batch"]),
             "--n_batch", str(info["n_batch"]), "--logits_all", "false", "--verbose", "false"],
            env=ENV, stdout=self.log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True)
        import httpx

        for _ in range(600):
            try:
                if httpx.get(self.url + "/v1/models", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.2)
        raise SystemExit(f"llama_cpp.server did not start:\n{self.log.read_text()[-2000:]}")

    def run(self, messages: list[dict[str, str]], config: dict[str, Any]) -> dict[str, Any]:
        import httpx

        body = {"messages": messages, "stream": True, "max_tokens": config["max_tokens"],
                "temperature": config["temperature"], "top_p": config["top_p"], "top_k": config["top_k"],
                "repeat_penalty": config["repeat_penalty"], "seed": config["seed"]}
        if config.get("grammar"):  # the citation grammar the gateway constrains its model with
            body["grammar"] = config["grammar"]

        def pieces() -> Iterator[str]:
            with httpx.stream("POST", self.url + "/v1/chat/completions", json=body, timeout=300) as r:
                r.raise_for_status()
                for _, data in sse(r):
                    if data.strip() == "[DONE]":
                        return
                    delta = json.loads(data)["choices"][0].get("delta") or {}
                    yield delta.get("content") or ""

        return timed(pieces())

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=20)


# -- the three parts ------------------------------------------------------------------------------
def streaming(server: Server, direct: Direct, llama: LlamaServer, questions: list[str],
              max_tokens: int) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    for i, question in enumerate(questions):
        prep = direct.prepare(question, max_tokens)
        order = SIDES[i % 3:] + SIDES[: i % 3]
        row: dict[str, Any] = {"question": question, "order": order}
        for side in order:
            if side == "gateway":
                row[side] = ask_stream(server.url, question, max_tokens)
            elif side == "direct":
                row[side] = direct.run()
            else:
                row[side] = llama.run(prep["messages"], prep["config"])
        fin = row["gateway"]["final"]
        # the model wrote the whole answer; the support check may then show it or the evidence instead
        row["answered"] = fin.get("mode") == "generate" and fin.get("outcome") in ("answered", "evidence_only")
        t = fin.get("timings") or {}
        row["retrieval_ms"] = t.get("retrieval_ms")
        row["server_overhead_ms"] = t.get("overhead_ms")
        row["runtime_ttft_ms"] = t.get("runtime_ttft_ms")
        row["same_prompt"] = t.get("prompt_tokens") == row["direct"].get("prompt_tokens")
        row["same_text"] = row["gateway"]["text"].strip() == row["direct"]["text"].strip()
        if row["answered"] and row["retrieval_ms"] is not None and row["gateway"]["ttft_ms"]:
            row["gateway"]["gen_ttft_ms"] = row["gateway"]["ttft_ms"] - row["retrieval_ms"]
        print(f"round {i + 1}: " + ", ".join(
            f"{s} ttft {row[s]['ttft_ms'] or 0:.0f} ms tps {row[s]['tps'] or 0:.1f}" for s in SIDES)
            + f", retrieval {row['retrieval_ms']} ms, answered={row['answered']}", file=sys.stderr)
        rows.append(row)
    return {"rows": rows}


def pick_questions(url: str, questions: list[str], n: int) -> list[str]:
    """n questions spread over the set that the gateway answers (strong evidence), so that every
    round generates; checked with an extractive ask (retrieval only, no model)."""
    import httpx

    step = max(1, len(questions) // (2 * n))
    picked: list[str] = []
    for q in questions[::step] + questions:
        if len(picked) == n:
            break
        if q in picked:
            continue
        r = httpx.post(url + "/api/v1/ask", json={"question": q, "mode": "extractive"}, timeout=120)
        if r.status_code == 200 and r.json()["outcome"] in ("answered", "evidence_only"):  # extractive: evidence
            picked.append(q)
    return picked


def search_load(url: str, queries: list[str], clients: int, per_client: int,
                with_generation: bool, gen_question: str) -> dict[str, Any]:
    import httpx

    stop = threading.Event()
    generating = threading.Event()
    gens = [0]

    def generator() -> None:
        while not stop.is_set():
            generating.set()
            ask_stream(url, gen_question, 256)
            gens[0] += 1
        generating.clear()

    gen_thread = None
    if with_generation:
        gen_thread = threading.Thread(target=generator, daemon=True)
        gen_thread.start()
        time.sleep(1.0)  # the generation is under way (retrieval done, prompt being evaluated)
    latencies: list[float] = []
    during: list[bool] = []
    errors = [0]
    lock = threading.Lock()
    barrier = threading.Barrier(clients)

    def client(n: int) -> None:
        with httpx.Client(timeout=60) as http:
            barrier.wait()
            for j in range(per_client):
                q = queries[(n * per_client + j) % len(queries)]
                t0 = time.perf_counter()
                r = http.post(url + "/api/v1/search", json={"query": q, "k": 5})
                dt = (time.perf_counter() - t0) * 1000
                with lock:
                    if r.status_code != 200:
                        errors[0] += 1
                    latencies.append(dt)
                    during.append(generating.is_set())

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    stop.set()
    if gen_thread:
        gen_thread.join(timeout=300)
    return {"n": len(latencies), "p50": pct(latencies, 50), "p95": pct(latencies, 95), "max": max(latencies),
            "errors": errors[0], "rps": len(latencies) / wall, "during_generation": sum(during),
            "generations": gens[0]}


def cold_starts(data: Path, workdir: Path, runs: int) -> list[dict[str, Any]]:
    out = []
    for i in range(runs):
        server = Server(data, workdir)
        try:
            ready_s = server.start(timeout_s=300).ready_s
            time.sleep(3)
            idle = proc_mib(server.pid)
            ask_stream(server.url, "How do I level the bed on the Voron 0?", 64)
            time.sleep(1)
            after = proc_mib(server.pid)
            out.append({"run": i + 1, "ready_s": ready_s, "idle_rss_mb": idle["VmRSS"],
                        "after_answer_rss_mb": after["VmRSS"], "peak_rss_mb": after["VmHWM"]})
            print(f"cold start {i + 1}: {out[-1]}", file=sys.stderr)
        finally:
            server.stop()
    return out


# -- report -------------------------------------------------------------------------------------
def med(rows: list[dict[str, Any]], side: str, key: str) -> float | None:
    values = [r[side][key] for r in rows if r[side].get(key) is not None]
    return statistics.median(values) if values else None


def report(stream: dict[str, Any], loads: dict[str, dict[str, Any]], cold: list[dict[str, Any]],
           info: dict[str, Any]) -> str:
    rows = [r for r in stream["rows"] if r["answered"]]
    g_tps, d_tps, l_tps = (med(rows, s, "tps") for s in SIDES)
    g_ttft, d_ttft, l_ttft = (med(rows, s, "ttft_ms") for s in SIDES)
    g_gen = med(rows, "gateway", "gen_ttft_ms")
    # Paired per round (the sides of one round ran back to back, under the same machine load).
    ratios = [r["gateway"]["tps"] / r["direct"]["tps"] for r in rows if r["gateway"]["tps"] and r["direct"]["tps"]]
    deltas = [r["gateway"]["gen_ttft_ms"] - r["direct"]["ttft_ms"] for r in rows
              if r["gateway"].get("gen_ttft_ms") is not None and r["direct"]["ttft_ms"] is not None]
    inside = [r["runtime_ttft_ms"] - r["direct"]["ttft_ms"] for r in rows
              if r.get("runtime_ttft_ms") is not None and r["direct"]["ttft_ms"] is not None]
    ratio = statistics.median(ratios) if ratios else None
    delta = statistics.median(deltas) if deltas else None
    retr = statistics.median([r["retrieval_ms"] for r in rows]) if rows else None
    over = [r["server_overhead_ms"] for r in rows if r["server_overhead_ms"] is not None]
    lines = [
        "## Server: streaming overhead, search under load, cold start",
        "",
        f"llama-cpp-python {info['llama']}; model "
        f"SmolLM2-135M-Instruct Q4_1, profile `{info['profile']}` on all three sides, n_threads "
        f"{info['n_threads']} (batch {info['n_threads_batch']}), n_ctx {info['n_ctx']}, temperature 0, "
        f"max_tokens {info['max_tokens']}.",
        "",
        "### Streaming: gateway vs the runtime called directly vs llama-cpp-python's server",
        "",
        f"{len(stream['rows'])} rounds, one question each (sample question set), the three sides "
        "interleaved in each round with a rotating order; medians over the "
        f"{len(rows)} rounds the gateway answered by generation. All three get the same chat messages "
        "(the prompt the gateway's pipeline builds for that question) and settings; each keeps its own "
        "model instance, so llama.cpp's prefix cache helps all three alike. Measured at the client: "
        "TTFT = request -> first text; tokens/s = (pieces - 1) / (last - first piece).",
        "",
        "| Side | TTFT (ms) | decode tokens/s |",
        "|---|---:|---:|",
        f"| gateway `/api/v1/ask` SSE, as the client sees it (includes retrieval) | {_f(g_ttft)} | {_f(g_tps, 1)} |",
        f"| gateway, generation part (client TTFT - retrieval_ms of its final event) | {_f(g_gen)} | |",
        f"| runtime called directly (runtimes.registry.create_runtime, same profile) | {_f(d_ttft)} | "
        f"{_f(d_tps, 1)} |",
        f"| `python -m llama_cpp.server` `/v1/chat/completions` stream | {_f(l_ttft)} | {_f(l_tps, 1)} |",
        "",
        f"- **tokens/s ratio gateway / direct, median of the per-round ratios: {_f(ratio, 3)}** "
        f"(ratio of the medians {_f(g_tps / d_tps if g_tps and d_tps else None, 3)}; target >= 0.97: "
        f"{'met' if ratio is not None and ratio >= 0.97 else 'NOT met'}); gateway / llama-server: "
        f"{_f(g_tps / l_tps if g_tps and l_tps else None, 3)}.",
        f"- **TTFT delta, gateway generation part - direct, median of the per-round deltas: {_f(delta, 1)} ms** "
        f"(difference of the medians {_f(g_gen - d_ttft if g_gen is not None and d_ttft else None, 1)} ms; "
        "target <= +30 ms: "
        f"{'met' if delta is not None and delta <= 30 else 'NOT met'}); retrieval itself (embedding the "
        f"question + hybrid search), which the gateway adds and the others do not do: median {_f(retr)} ms.",
        f"- Of that delta, the runtime's own TTFT inside the gateway process (server-side `runtime_ttft_ms`) "
        f"minus the direct TTFT: median {_f(statistics.median(inside) if inside else None, 1)} ms, i.e. the "
        "same runtime code evaluating the same prompt, slower or faster only because of where and when it "
        "ran (CPU contention); the rest is the gateway's own work.",
        f"- The server's own accounting (final event `timings.overhead_ms` = TTFT - embedding - runtime TTFT "
        f"- queue - load): median {_f(statistics.median(over) if over else None, 1)} ms.",
        f"- Same prompt (gateway's prompt_tokens = direct's) in {sum(r['same_prompt'] for r in rows)}/"
        f"{len(rows)} rounds; same text in {sum(r['same_text'] for r in rows)}/{len(rows)}.",
        "",
        "Per round (ms; tokens/s):",
        "",
        "| # | retrieval | gateway TTFT | gateway gen. TTFT | its runtime TTFT (server-side) | direct TTFT "
        "| llama-server TTFT | gateway t/s | direct t/s | llama-server t/s | pieces g/d/l |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for i, r in enumerate(stream["rows"], 1):
        lines.append(
            f"| {i}{'' if r['answered'] else ' (not generated)'} | {_f(r['retrieval_ms'])} | "
            f"{_f(r['gateway']['ttft_ms'])} | {_f(r['gateway'].get('gen_ttft_ms'))} | {_f(r.get('runtime_ttft_ms'))} | "
            f"{_f(r['direct']['ttft_ms'])} | {_f(r['llama-server']['ttft_ms'])} | {_f(r['gateway']['tps'], 1)} | "
            f"{_f(r['direct']['tps'], 1)} | {_f(r['llama-server']['tps'], 1)} | "
            f"{r['gateway']['pieces']}/{r['direct']['pieces']}/{r['llama-server']['pieces']} |")
    lines += ["", "### `/api/v1/search` with 16 concurrent clients", "",
              "16 client threads with their own keep-alive connection, each sending sample questions as "
              "searches (k=5) back to back over loopback.", "",
              "| Condition | searches | p50 (ms) | p95 (ms) | max (ms) | searches/s | errors |",
              "|---|---:|---:|---:|---:|---:|---:|"]
    for name, r in loads.items():
        extra = (f" ({r['during_generation']} of them while a generation was running; "
                 f"{r['generations']} generations finished)") if r["generations"] or r["during_generation"] else ""
        lines.append(f"| {name}{extra} | {r['n']} | {_f(r['p50'])} | {_f(r['p95'])} | {_f(r['max'])} | "
                     f"{_f(r['rps'], 1)} | {r['errors']} |")
    lines += ["", "### Cold start and memory", "",
              "Spawn of `python -m gateway serve` -> first 200 from `/api/v1/health` (the server answers 503 "
              "\"loading\" until the index, the embedding model and the LLM are loaded). RSS of the server "
              "process from /proc/PID/status, 3 s after ready (idle) and after one answer.", "",
              "| Run | spawn -> 200 (s) | idle VmRSS (MiB) | after an answer (MiB) | VmHWM (MiB) |",
              "|---:|---:|---:|---:|---:|"]
    for c in cold:
        lines.append(f"| {c['run']} | {c['ready_s']:.2f} | {c['idle_rss_mb']:.0f} | {c['after_answer_rss_mb']:.0f} "
                     f"| {c['peak_rss_mb']:.0f} |")
    lines += ["", "Run 1 may read the model files from disk; later runs find them in the page cache."]
    return "\n".join(lines) + "\n"


def _f(value: float | None, digits: int = 0) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def build_data(target: Path) -> Path:
    from gateway.config import Settings
    from gateway.services import Services

    report = Services(Settings(data_dir=target)).ingest([ROOT / "sample_manuals"])
    if not report.version:
        raise SystemExit(f"sample ingest failed: {report}")
    return target


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--max-tokens", type=int, default=96)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--per-client", type=int, default=8)
    ap.add_argument("--cold-runs", type=int, default=2)
    ap.add_argument("--profile", type=Path, help="a deployment profile for all sides (default: the built-in "
                    "default profile)")
    ap.add_argument("--data", type=Path, help="an existing data dir with the samples ingested (copied)")
    ap.add_argument("--out", type=Path, default=None, help="the Markdown file (default: its section)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker)
        return
    os.environ.update({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    from bench.suite.retrieval_quality import load_questions

    questions = [q for q in load_questions() if q.get("answerable")]
    work = Path(tempfile.mkdtemp(prefix="mqa-bench-server-"))
    try:
        data = work / "data"
        if args.data:
            shutil.copytree(args.data, data, ignore=shutil.ignore_patterns("gateway.db*"))
        else:
            print("ingesting the sample manuals ...", file=sys.stderr)
            build_data(data)
        write_config(work, args.profile)
        cold = cold_starts(data, work, args.cold_runs)
        server = Server(data, work)
        server.start(timeout_s=300)
        direct = Direct(data)
        llama = LlamaServer(direct.info, work)
        try:
            picked = pick_questions(server.url, [q["question"] for q in questions], args.rounds)
            stream = streaming(server, direct, llama, picked, args.max_tokens)
            direct.stop()
            llama.stop()  # the load test measures the gateway alone
            queries = [q["question"] for q in load_questions()]
            loads = {
                "generator idle": search_load(server.url, queries, args.clients, args.per_client, False, ""),
                "while generating": search_load(server.url, queries, args.clients, args.per_client, True,
                                                picked[0]),
            }
        finally:
            server.stop()
            llama.stop()
        info = {"llama": importlib.metadata.version("llama_cpp_python"), "n_threads": direct.info["n_threads"],
                "n_threads_batch": direct.info["n_threads_batch"],
                "n_ctx": direct.info["n_ctx"], "max_tokens": args.max_tokens, "profile": direct.info["profile"]}
        text = report(stream, loads, cold, info)
        print(text)
        write_section(__spec__.name, text, out=args.out)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
