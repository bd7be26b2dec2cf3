"""The gateway's process and its model worker keep every CPU they were started with.

From 2026-11-30 to 2026-12-03 the gateway set OMP_PROC_BIND=true for itself; faiss's libgomp then
bound the importing thread to the first core, and everything started afterwards inherited that one
core: the llama.cpp worker process (which sized its thread pool from its affinity: one thread, half
the prefill speed on 2 cores), the parse workers, the embedder's threads. Each check runs in a fresh
interpreter, because what matters is the order a gateway loads things in: `gateway` first, then
faiss (the index), then the runtime worker.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CPUS = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []

pytestmark = pytest.mark.skipif(len(CPUS) < 2, reason="one CPU (or no affinity API): a process pinned to "
                                                      "one core cannot be told from one that is not")

GATEWAY_THEN_FAISS = """
import json, os
import gateway  # every manualqa entry point imports it first
import faiss, numpy as np
index = faiss.IndexFlatIP(8)
index.add(np.ones((64, 8), dtype="float32"))
index.search(np.ones((4, 8), dtype="float32"), 3)
out = {"after_faiss": sorted(os.sched_getaffinity(0))}
"""


def run(code: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "GOMP_"))}
    proc = subprocess.run([sys.executable, "-c", code + "\nprint(json.dumps(out))"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_loading_the_index_does_not_pin_the_gateway_to_one_core() -> None:
    out = run(GATEWAY_THEN_FAISS + """
import threading
seen = {}
t = threading.Thread(target=lambda: seen.update(cpus=sorted(os.sched_getaffinity(0))))
t.start(); t.join()
out["new_thread"] = seen["cpus"]
""")
    assert out["after_faiss"] == CPUS
    assert out["new_thread"] == CPUS  # the HTTP, embedder and answer threads started later


def test_the_model_worker_started_after_the_index_uses_every_core() -> None:
    pytest.importorskip("llama_cpp", reason="the [llm] extra is not installed")
    out = run(GATEWAY_THEN_FAISS + """
from runtimes.defaults import default_gguf_path, physical_cores
from runtimes.registry import create_runtime
rt = create_runtime("llamacpp", str(default_gguf_path()), {"n_ctx": 512})
rt.load()
try:
    out.update(worker_cpus=sorted(os.sched_getaffinity(rt.pid)), n_threads=rt.n_threads, cores=physical_cores())
finally:
    rt.unload()
""")
    assert out["worker_cpus"] == CPUS
    assert out["n_threads"] == out["cores"] >= 2
