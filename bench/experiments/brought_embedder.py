"""What a site gains by bringing its own embedder: the built-in one against a converted sentence-transformers model.

Issue 47 item 6. The instrument is EmbeddingGemma-300M (Gemma's terms; assembled outside the repository
by train/embedder_instrument.py, never a dependency), converted once by ``manualqa embedder convert``
to an ONNX directory and chosen as a site would: ``embedding.model = "onnx:DIR"``. Each half is its own
gateway, as bench/suite/languages_eval.py builds them (its manuals + the two sample manuals as
distractors, ingested by the real path into a temporary data directory with the shipped settings,
searched by Services.search, k = 5, the shipped hybrid search); a hit is a passage of the gold manual on
a gold page (languages_eval's scoring and table). Each (embedder, halves) runs in its own child process,
so peak RSS is that embedder's. Per half: ingest chunks/s (the whole ingest: parse, OCR, chunk, embed,
index), the ingest's own embedding time (IngestReport.timings["embed"]), the embedder's own query embed
time (encode_query of every question, after the search warmed it), p50.

    python -m bench.experiments.brought_embedder --brought onnx:/work/instruments/embeddinggemma-300m-onnx
    python -m bench.experiments.brought_embedder --brought onnx:DIR --halves zh-dev de-dev dev --no-write
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
REPO = HERE.parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.suite.languages_eval import EVAL, SAMPLES, gold_rank, group_of, questions_of, table, tally  # noqa: E402

HALVES = ("zh-dev", "de-dev", "dev", "zh-test", "de-test", "test")
BUILTIN = "onnx:minilm-l6-int8"


def _rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def measure(halves: list[str], embedder: str) -> dict[str, Any]:
    """{half: {group: {n, hit1, hit5, mrr, misses}}, "_cost": {half: {...}}, "_process": {...}}."""
    from gateway.config import Settings
    from gateway.services import Services

    out: dict[str, Any] = {}
    cost: dict[str, Any] = {}
    for half in halves:
        folder = EVAL / half
        pdfs = sorted((folder / "manuals").glob("*.pdf")) + sorted(SAMPLES.glob("*.pdf"))
        questions = questions_of(folder)
        with tempfile.TemporaryDirectory(prefix=f"brought-{half}-") as tmp:
            settings = Settings(data_dir=Path(tmp) / "data")
            settings.embedding.model = embedder
            gw = Services(settings)
            t = time.perf_counter()
            report = gw.ingest(pdfs)
            ingest_s = time.perf_counter() - t
            if getattr(report, "failed", None):
                raise SystemExit(f"{half}: ingest failed: {report.failed}")
            chunks = sum(m["chunk_count"] for m in gw.store.open().chunks.manuals())
            groups: dict[str, dict[str, Any]] = {}
            for q in questions:
                hits = gw.search(q["question"], k=5)
                g = groups.setdefault(group_of(half, q["id"]), {"n": 0, "hit1": 0, "hit5": 0, "mrr": 0.0,
                                                                 "misses": []})
                if q["answerable"]:
                    tally(g, gold_rank(hits, q), q["id"])
            embed_ms = []
            for q in questions:
                t = time.perf_counter()
                gw.embedder.encode_query(q["question"])
                embed_ms.append((time.perf_counter() - t) * 1000)
            embed_ms.sort()
            embed_s = float(getattr(report, "timings", {}).get("embed", 0.0))
            cost[half] = {"chunks": chunks, "ingest_s": ingest_s, "chunks_per_s": chunks / ingest_s,
                          "embed_s": embed_s, "embed_chunks_per_s": chunks / embed_s if embed_s else 0.0,
                          "embed_p50_ms": embed_ms[len(embed_ms) // 2], "rss_mib": _rss_mib(),
                          "model_id": gw.embedder.model_id}
            gw.log.close()
        out[half] = groups
        print(f"{embedder} {half}: {json.dumps(cost[half])}", file=sys.stderr, flush=True)
    out["_cost"] = cost
    out["_process"] = {"peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    return out


def in_child(half: str, embedder: str, keep: Path | None) -> dict[str, Any]:
    """One half under one embedder in a fresh child process; with `keep`, its result is kept there as JSON
    and re-used by a later run (so the halves can be measured a few at a time, then written together)."""
    kept = keep / f"{embedder.replace('/', '_').replace(':', '_')}--{half}.json" if keep else None
    if kept is not None and kept.is_file():
        return dict(json.loads(kept.read_text()))
    with tempfile.NamedTemporaryFile(suffix=".json") as fh:
        subprocess.run([sys.executable, "-m", "bench.experiments.brought_embedder", "--measure", fh.name,
                        "--embedder", embedder, "--halves", half], cwd=REPO, check=True)
        result = dict(json.loads(Path(fh.name).read_text()))
    if kept is not None:
        kept.parent.mkdir(parents=True, exist_ok=True)
        kept.write_text(json.dumps(result))
    return result


def measure_side(halves: list[str], embedder: str, keep: Path | None) -> dict[str, Any]:
    """in_child's results of each half merged: {half: groups, "_cost": {half: ...}, "_process": {half: ...}}."""
    out: dict[str, Any] = {"_cost": {}, "_process": {}}
    for half in halves:
        one = in_child(half, embedder, keep)
        out[half] = one[half]
        out["_cost"][half] = one["_cost"][half]
        out["_process"][half] = one["_process"]["peak_rss_mib"]
    return out


def cost_table(results: dict[str, dict[str, Any]]) -> str:
    lines = ["| embedder | half | chunks | ingest s | ingest chunks/s | embed s | embed chunks/s | "
             "query embed p50 ms | RSS after MiB |", "|---|---|---|---|---|---|---|---|---|"]
    for side, res in results.items():
        for half, c in res["_cost"].items():
            lines.append(f"| {side} | {half} | {c['chunks']} | {c['ingest_s']:.1f} | {c['chunks_per_s']:.2f} | "
                         f"{c['embed_s']:.1f} | {c['embed_chunks_per_s']:.2f} | {c['embed_p50_ms']:.1f} | "
                         f"{c['rss_mib']:.0f} |")
    lines.append("")
    lines.append("Peak RSS of the process (ingest and searches of one half, its own process), largest over the "
                 "halves: " + ", ".join(f"{side} {max(res['_process'].values()):.0f} MiB"
                                        for side, res in results.items()))
    return "\n".join(lines)


def retrieval_tables(results: dict[str, dict[str, Any]]) -> str:
    """languages_eval's table of the sides measured on every half; a side measured on fewer halves gets its
    own table beside the built-in one on those halves."""
    halves = [h for h in results["built-in"] if not h.startswith("_")]
    full = {k: v for k, v in results.items() if all(h in v for h in halves)}
    text = table(full)
    for name, res in results.items():
        if name in full:
            continue
        mine = [h for h in halves if h in res]
        pair = {"built-in": {h: results["built-in"][h] for h in mine}, name: res}
        text += f"\n\n`{name}` on {', '.join(mine)} only:\n\n" + table(pair)
    return text


def write(results: dict[str, dict[str, Any]], brought: list[str], argv: list[str], notes: str) -> Path:
    from bench.harness import write_section

    text = ("# Bring your own embedder: EmbeddingGemma-300M against the built-in one (issue 47 item 6)\n\n"
            f"Built-in: `{BUILTIN}` (all-MiniLM-L6-v2, int8). Brought: "
            + ", ".join(f"`{b}`" for b in brought) + ": EmbeddingGemma-300M "
            "converted once by `manualqa embedder convert` (`gemma-onnx` fp32; `gemma-onnx-int8` with `--int8`; "
            "a measurement instrument under Gemma's terms, "
            "assembled outside the repository by train/embedder_instrument.py; its weights are never in the "
            "repository, the lock or the bundle). Shipped hybrid search, k = 5, each half its own gateway "
            "(its manuals + the two sample manuals as distractors). `zh`/`de`: asked in the manual's language; "
            "`en->zh`/`en->de`: asked in English about those manuals; `en`: the English halves. The -dev halves "
            "were looked at first, the -test halves measured once.\n\n" + retrieval_tables(results) + "\n\n"
            "Cost (2 cores shared with other work, so times are indicative; ingest includes parsing and OCR of the "
            "PDFs, embed is the ingest's embedding stage; query embed is the embedder's encode_query "
            "alone):\n\n" + cost_table(results) + ("\n\n" + notes.strip() if notes.strip() else "") +
            "\n\nMisses: " + json.dumps({side: {h: {g: v["misses"] for g, v in groups.items()}
                                                for h, groups in res.items() if not h.startswith("_")}
                                         for side, res in results.items()}, ensure_ascii=False))
    return write_section("bench.experiments.brought_embedder", text, argv=argv)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--brought", nargs="+", default=["onnx:/work/instruments/embeddinggemma-300m-onnx"],
                        help="the converted embedders' embedding.model settings (each its own column)")
    parser.add_argument("--halves", nargs="+", default=list(HALVES), choices=HALVES)
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--notes", default="", help="a paragraph added after the cost table")
    parser.add_argument("--dev-only", nargs="*", default=[], help="brought embedders measured on the -dev halves only")
    parser.add_argument("--keep", help="a folder keeping each (embedder, half) result; a later run re-uses them")
    parser.add_argument("--measure", help=argparse.SUPPRESS)  # child mode: write measure()'s JSON here
    parser.add_argument("--embedder", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        Path(args.measure).write_text(json.dumps(measure(args.halves, args.embedder)))
        return 0
    keep = Path(args.keep) if args.keep else None
    results = {"built-in": measure_side(args.halves, BUILTIN, keep)}
    for spec in args.brought:
        results[Path(spec.removeprefix("onnx:")).name.replace("embeddinggemma-300m", "gemma")] = \
            measure_side(args.halves if spec not in args.dev_only else [h for h in args.halves if h.endswith("-dev")],
                         spec, keep)
    print(retrieval_tables(results))
    print(cost_table(results))
    if not args.no_write:
        print(write(results, args.brought, sys.argv[1:] if argv is None else argv, args.notes))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
