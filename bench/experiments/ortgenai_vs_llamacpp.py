"""Two artifacts of one source on one prompt: llama.cpp (the Q4_1 GGUF) against onnxruntime-genai (int4 folder
from deploy/convert_smollm2.py), each in its supervised worker as the gateway runs them (issue 28, first look).

Same chat prompt, same greedy generation config (max_tokens, repeat_penalty 1.1), same thread count; one
warm-up, then N runs each, alternating the two so the shared machine's load falls on both alike. Reports
load time (worker start to ready), TTFT, decode tok/s, prompt/output tokens, the worker's peak RSS, and
whether the two texts agree. The full `manualqa bench --profiles` comparison over a question set is not this.

    python -m bench.experiments.ortgenai_vs_llamacpp [--folder DIR] [--runs 5] [--max-tokens 128]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Any

from bench.harness import write_section
from runtimes.base import GenerationConfig, GenerationStats, Runtime
from runtimes.hashing import default_cache_dir
from runtimes.registry import create_runtime
from runtimes.worker_protocol import peak_rss_bytes

FOLDER = default_cache_dir() / "artifacts" / "smollm2-135m-instruct-ortgenai-int4-cpu"
QUESTION = "How often should the air filter of a compressor be cleaned? Answer in two sentences."


def prompt(run: int) -> list[dict[str, str]]:
    """Each run's prompt starts differently, so llama.cpp cannot reuse the last run's KV cache for the question
    (it still may for the system prompt before it; onnxruntime-genai starts every generator empty)."""
    return [{"role": "user", "content": f"Question {run}. {QUESTION}"}]


def load(backend: str, artifact: str, threads: int) -> tuple[Runtime, float]:
    started = time.perf_counter()
    runtime = create_runtime(backend, artifact, {"n_ctx": 4096, "n_threads": threads})
    runtime.load()
    return runtime, (time.perf_counter() - started) * 1000


def once(runtime: Runtime, max_tokens: int, run: int) -> tuple[str, GenerationStats]:
    config = GenerationConfig(max_tokens=max_tokens, temperature=0.0, repeat_penalty=1.1, seed=0)
    pieces: list[str] = []
    stats = GenerationStats()
    for item in runtime.stream(prompt(run), config):
        if isinstance(item, GenerationStats):
            stats = item
        else:
            pieces.append(item)
    return "".join(pieces), stats


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folder", type=Path, default=FOLDER)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    arms = {"llamacpp (Q4_1 GGUF)": ("llamacpp", "default"), "ortgenai (int4 folder)": ("ortgenai", str(args.folder))}
    loaded: dict[str, tuple[Runtime, float]] = {k: load(b, a, args.threads) for k, (b, a) in arms.items()}
    results: dict[str, list[GenerationStats]] = {k: [] for k in arms}
    texts: dict[str, str] = {}
    for name, (runtime, _) in loaded.items():
        texts[name] = once(runtime, args.max_tokens, 0)[0]  # warm-up
    for run in range(1, args.runs + 1):
        for name, (runtime, _) in loaded.items():
            results[name].append(once(runtime, args.max_tokens, run)[1])
    rows = []
    for name, (runtime, load_ms) in loaded.items():
        runs = results[name]
        pid: Any = getattr(runtime, "pid", None)
        peak = peak_rss_bytes(pid) if pid else None
        chain = runtime.describe()
        tps = [s.decode_tps for s in runs if s.decode_tps]
        ttft = [s.ttft_ms for s in runs if s.ttft_ms is not None]
        rows.append(f"| {name} | {chain.data['artifact']['size_bytes'] / 2**20:.1f} | {load_ms:.0f} | "
                    f"{runs[0].prompt_tokens} | {statistics.median(s.output_tokens for s in runs):.0f} | "
                    f"{statistics.median(ttft):.0f} | {statistics.median(tps):.1f} | "
                    f"{(peak or 0) / 2**20:.0f} | `{chain.chain_id}` |")
        runtime.unload()
    a, b = texts.values()
    common = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    text = "\n".join([
        "# ortgenai vs llama.cpp: one source, two artifacts, one prompt",
        "",
        f"Greedy, max_tokens {args.max_tokens}, repeat_penalty 1.1, {args.threads} threads, each backend in its "
        f"supervised worker; medians of {args.runs} runs after one warm-up, the two interleaved.",
        "",
        "| artifact | size MiB | load ms | prompt tok | output tok | TTFT ms | decode tok/s | worker peak RSS MiB "
        "| chain |",
        "|---|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        f"The warm-up texts agree on their first {common} characters of {len(a)} / {len(b)}. Differences in the "
        "chains that can explain it: the ortgenai weights are Q4_1 dequantized and quantized again to int4 "
        "(block 32); onnxruntime-genai's repetition penalty covers the whole sequence, llama.cpp's its last "
        "64 tokens.",
        "",
        *[f"- {name}: {t!r}" for name, t in texts.items()],
    ])
    path = write_section(__spec__.name if __spec__ else "bench.experiments.ortgenai_vs_llamacpp", text)
    print(text)
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
