"""Chunk size and overlap, measured: retrieval quality per chunker setting on the sample set.

Builds one index per setting through the real ingest path and reports hybrid hit@1 / hit@5 / MRR,
the chunk count and the mean chunk length (which sets how much of the prompt 5 passages take).

    python -m bench.experiments.chunking        # writes docs/bench/experiments/chunking.md
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from bench.harness import write_section
from bench.suite.retrieval_quality import SAMPLES, evaluate, load_questions

SETTINGS = [(400, 80), (600, 100), (900, 0), (900, 150), (1300, 200), (1800, 250)]


def run() -> str:
    from ingest.models import ChunkParams, ParseLimits
    from retrieval.embedders import load_embedder
    from retrieval.versions import IndexStore

    embedder = load_embedder()
    questions = load_questions()
    vectors = {q["id"]: embedder.encode_query(q["question"]) for q in questions}
    lines = ["## Chunk size and overlap (sample manuals, hybrid search, k=5)", "",
             "One index per setting, built by the real ingest path; answerable questions of "
             "`sample_manuals/questions.jsonl`. Rerun: `python -m bench.experiments.chunking`.", "",
             "| max_chars | overlap | chunks | mean chars | hit@1 | hit@5 | MRR@5 |", "|---|---|---|---|---|---|---|"]
    for max_chars, overlap in SETTINGS:
        with tempfile.TemporaryDirectory(prefix="manualqa-chunk-") as tmp:
            store = IndexStore(Path(tmp))
            params = ChunkParams(max_chars=max_chars, overlap_chars=overlap, min_chars=min(80, max_chars // 5))
            store.ingest(sorted(SAMPLES.glob("*.pdf")), embedder, params, ParseLimits())
            version = store.open()
            n = version.chunks.chunk_count()
            rows = version.chunks.get_rows(list(range(n)))
            mean = sum(len(r["text"]) for r in rows) / max(1, n)
            r = evaluate(store, embedder, questions, "hybrid", vectors=vectors)
            lines.append(f"| {max_chars} | {overlap} | {n} | {mean:.0f} | {r['hit@1']:.3f} | {r['hit@5']:.3f} | "
                         f"{r['mrr']:.3f} |")
            print(lines[-1], flush=True)
            version.chunks.close()
    lines += ["", ""]
    text = "\n".join(lines)
    write_section(__spec__.name, text)
    return text


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    print(run())


if __name__ == "__main__":
    main()
