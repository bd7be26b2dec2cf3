"""Ingest throughput vs. the embedding model alone, on copies of the sample manuals.

Ingest = discover + hash + sandboxed parse (worker processes) + chunk + embed + SQLite/FTS5 +
FAISS + manifest + verify + activate. Embedding is the floor: the ratio encode-only / ingest says
how much of the ingest's wall time is anything but the model (1.0 = none; parsing overlaps the
embedding, so it should cost little). Both runs use the same model object, the same chunk texts
and the same process, after a warm-up.

    .venv/bin/python -m bench.ingest_throughput [--copies 4] [--write docs/bench/ingest.md]
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SAMPLES = sorted((REPO / "sample_manuals").glob("*.pdf"))


def make_corpus(target: Path, copies: int) -> list[Path]:
    """`copies` byte-distinct copies of each sample (a PDF comment appended after %%EOF)."""
    target.mkdir(parents=True, exist_ok=True)
    out = []
    for i in range(copies):
        for pdf in SAMPLES:
            dst = target / f"{pdf.stem}-copy{i}.pdf"
            dst.write_bytes(pdf.read_bytes() + f"\n% manualqa bench copy {i}\n".encode())
            out.append(dst)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--copies", type=int, default=4, help="copies of each sample manual (default 4)")
    ap.add_argument("--workers", type=int, default=2, help="parse worker processes (default 2)")
    ap.add_argument("--write", type=Path, default=None, help="also write the Markdown to this file")
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

    from ingest.models import ChunkParams, ParseLimits
    from retrieval.embeddings import Embedder, passage_text
    from retrieval.versions import IndexStore

    embedder = Embedder()
    embedder.encode(["warm-up: load the model and its kernels"] * 8)
    with tempfile.TemporaryDirectory(prefix="manualqa-bench-") as tmp:
        corpus = make_corpus(Path(tmp) / "corpus", args.copies)
        store = IndexStore(Path(tmp) / "data")
        t0 = time.perf_counter()
        report = store.ingest(corpus, embedder, ChunkParams(), ParseLimits(), workers=args.workers)
        ingest_s = time.perf_counter() - t0
        if report.failed or not report.version:
            print(f"ingest failed: {report.failed}", file=sys.stderr)
            return 1
        version = store.open()
        texts = [passage_text(c.heading, c.text) for m in version.manifest["manuals"]
                 for c in version.chunks.chunks_for_manual(m["sha256"])]
        encode_runs = []
        for _ in range(2):
            t0 = time.perf_counter()
            embedder.encode(texts)
            encode_runs.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        again = store.ingest(corpus, embedder, ChunkParams(), ParseLimits(), workers=args.workers)
        noop_s = time.perf_counter() - t0
        assert again.version is None
    encode_s = statistics.mean(encode_runs)
    self_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    child_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    try:
        import torch

        threads = torch.get_num_threads()
    except ImportError:  # pragma: no cover
        threads = "?"
    lines = [
        "## Ingest throughput",
        "",
        f"`python -m bench.ingest_throughput --copies {args.copies} --workers {args.workers}` — "
        f"{len(corpus)} PDFs ({args.copies} byte-distinct copies of each sample manual), "
        f"{report.pages} pages, {report.chunks} chunks; model {embedder.model_id}, batch "
        f"{embedder.batch_size}, torch threads {threads}; {platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}.",
        "",
        "| measure | value |",
        "|---|---|",
        f"| ingest wall time (parse + chunk + embed + write + verify + activate) | {ingest_s:.2f} s |",
        f"| encode-only, same chunk texts, same model (mean of {len(encode_runs)}) | {encode_s:.2f} s "
        f"({', '.join(f'{r:.2f}' for r in encode_runs)}) |",
        f"| **ratio ingest throughput / encode-only** | **{encode_s / ingest_s:.3f}** |",
        f"| pages/s (ingest) | {report.pages / ingest_s:.2f} |",
        f"| chunks/s (ingest) | {report.chunks / ingest_s:.2f} |",
        f"| chunks/s (encode-only) | {len(texts) / encode_s:.2f} |",
        f"| re-ingest of the same files (no change: hash only) | {noop_s:.2f} s |",
        f"| peak RSS, ingest process | {self_rss:.0f} MiB |",
        f"| peak RSS, largest parse worker | {child_rss:.0f} MiB |",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if args.write:
        args.write.parent.mkdir(parents=True, exist_ok=True)
        args.write.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
