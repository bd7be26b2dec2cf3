"""One core or two: what OMP_PROC_BIND=true in the gateway process cost (2026-11-30 .. 2026-12-03).

gateway/__init__ set OMP_PROC_BIND=true. faiss's libgomp, loaded when the index is, then bound the
loading thread to the first core, and every thread and process started afterwards inherited that one
core: the embedder's threads, the parse workers and the llama.cpp worker, which sized its pool from
its affinity (runtimes.defaults.physical_cores: one thread). This script measures the two settings side
by side: each round starts one fresh interpreter per setting (alternating which goes first), which
loads things in a gateway's order (`gateway`, then faiss, then the embedder and the model worker)
and measures

- the embedder (the shipped int8 MiniLM through onnxruntime): chunks per second over 256 passages;
- the model worker (a supervised llama.cpp worker, as the gateway runs it): its CPUs and threads,
  time to first token for a ~500-token prompt of manual text (the prefill), and decode tokens/s.

    python -m bench.experiments.cpu_affinity [--rounds 3] [--gguf PATH ...] [--no-write]

A one-off record: it writes docs/bench/experiments/cpu_affinity.md; `make bench` does not rerun it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.harness import REPO, write_section

SETTINGS = {"pinned (OMP_PROC_BIND=true: the old default)": {"OMP_PROC_BIND": "true"},
            "not pinned (now)": {}}

CHILD = r"""
import json, os, sys, time
import gateway  # every manualqa entry point imports it first
import faiss, numpy as np
index = faiss.IndexFlatIP(8)
index.add(np.ones((64, 8), dtype="float32"))
index.search(np.ones((4, 8), dtype="float32"), 3)
from pypdf import PdfReader
text = " ".join(page.extract_text() or "" for page in PdfReader(sys.argv[1]).pages[:12])
words = text.split()
passages = [" ".join(words[i:i + 120]) for i in range(0, 120 * 256, 120)]
out = {"gateway_cpus": sorted(os.sched_getaffinity(0))}
from retrieval.embedders import load_embedder
emb = load_embedder()
emb.encode(passages[:8])  # load and warm up
t = time.perf_counter(); emb.encode(passages); out["embed_chunks_per_s"] = len(passages) / (time.perf_counter() - t)
from runtimes.base import GenerationConfig, GenerationStats
from runtimes.registry import create_runtime
prompt = "Summarise these manual passages for a technician in three sentences.\n\n" + " ".join(words[:380])
for gguf in sys.argv[2:]:
    rt = create_runtime("llamacpp", gguf, {"n_ctx": 2048})
    rt.load()
    try:
        config = GenerationConfig(max_tokens=48, temperature=0.0, seed=0)
        stats = [s for s in rt.stream([{"role": "user", "content": prompt}], config) if isinstance(s, GenerationStats)]
        s = stats[-1]
        out[gguf] = {"worker_cpus": sorted(os.sched_getaffinity(rt.pid)), "n_threads": rt.n_threads,
                     "prompt_tokens": s.prompt_tokens, "ttft_ms": s.ttft_ms, "decode_tps": s.decode_tps}
    finally:
        rt.unload()
print(json.dumps(out))
"""


def one(setting: dict[str, str], ggufs: list[str]) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "GOMP_"))} | setting
    env["PYTHONPATH"] = str(REPO)
    manual = REPO / "sample_manuals" / "voron0_setup_guide.pdf"
    proc = subprocess.run([sys.executable, "-c", CHILD, str(manual), *ggufs], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=1800)
    if proc.returncode:
        raise SystemExit(proc.stderr[-3000:])
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def run(rounds: int, ggufs: list[str]) -> str:
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in SETTINGS}
    names = list(SETTINGS)
    for r in range(rounds):
        for name in names[r % 2:] + names[:r % 2]:  # alternate which setting goes first
            runs[name].append(one(SETTINGS[name], ggufs))
            print(name, json.dumps(runs[name][-1]), flush=True)
    med = statistics.median
    lines = ["## One core or two: OMP_PROC_BIND in the gateway process (bench/experiments/cpu_affinity.py)", "",
             f"{rounds} rounds, one fresh interpreter per setting per round (alternating which goes first), "
             "loading `gateway`, then faiss, then the embedder and a supervised llama.cpp worker, as a gateway "
             "does. Medians over the rounds. TTFT: a ~500-token prompt of manual text, nothing cached (the "
             "prefill); decode: 48 tokens at temperature 0.", "",
             "| setting | gateway CPUs | embedder chunks/s | model | worker CPUs | n_threads | prompt tokens "
             "| TTFT ms | decode tok/s |", "|---|---|---|---|---|---|---|---|---|"]
    for name in names:
        rs = runs[name]
        emb = med(r["embed_chunks_per_s"] for r in rs)
        for gguf in ggufs:
            g = [r[gguf] for r in rs]
            lines.append(f"| {name} | {rs[0]['gateway_cpus']} | {emb:.1f} | {Path(gguf).name} | {g[0]['worker_cpus']} "
                         f"| {g[0]['n_threads']} | {g[0]['prompt_tokens']} | {med(x['ttft_ms'] for x in g):,.0f} "
                         f"| {med(x['decode_tps'] for x in g):.1f} |")
    old, new = (runs[n] for n in names)

    def ratio(pick: Any) -> float:
        return float(med(pick(r) for r in new) / med(pick(r) for r in old))

    ratios = [f"embedder chunks/s now / pinned: {ratio(lambda r: r['embed_chunks_per_s']):.2f}"]
    for gguf in ggufs:
        ratios.append(f"{Path(gguf).name}: TTFT now / pinned {ratio(lambda r, g=gguf: r[g]['ttft_ms']):.2f}, "
                      f"decode tok/s now / pinned {ratio(lambda r, g=gguf: r[g]['decode_tps']):.2f}")
    lines += ["", "Ratios (medians): " + "; ".join(ratios) + "."]
    return "\n".join(lines)


def main() -> None:
    from runtimes.defaults import default_gguf_path

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--gguf", action="append", default=[], help="more GGUFs to time (the built-in SmolLM2 always)")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    text = run(args.rounds, [str(default_gguf_path()), *args.gguf])
    print(text)
    if not args.no_write:
        write_section(__spec__.name, text, argv=sys.argv[1:],
                      conditions="Load: nothing else running on the machine while measured (see load average).")


if __name__ == "__main__":
    main()
