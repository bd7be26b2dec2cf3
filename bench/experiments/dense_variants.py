"""Cheaper dense-side variants than a new embedder, tried on eval/dev only (nothing here was adopted).

The dense side of the hybrid search is the weakest part on unseen manuals (test hit@1 0.45 alone),
and no stronger embedder or cross-encoder installs offline from the registry. These variants keep
all-MiniLM-L6-v2 and change how it is used; each replaces the index's stored vectors in memory
and runs the real `retrieval.search` (shipped fusion, k=5) on the development half:

- **windows (MaxP)**: a chunk is also embedded as overlapping character windows (heading and title
  prefixed like the chunk), and its cosine is the best of the chunk and its windows: 12 % of
  chunks are longer than the model's 256 tokens, and it was trained on 128;
- **windows, half-weighted**: the mean of the chunk's cosine and that best;
- **pseudo-relevance feedback**: the query vector plus beta times the mean vector of the top m
  fused passages, searched again;
- **128 tokens**: passages truncated at 128 tokens, what the model was trained on (ingest embeds
  about 1.6x faster, which issue 12's ingest goal wants).

    python -m bench.experiments.dense_variants          # ~2 min; writes docs/bench/experiments/dense_variants.md
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bench.harness import write_section
from bench.suite.retrieval_eval import build, evaluate, shipped, split_paths

Scorer = Callable[[np.ndarray], np.ndarray]  # query vector -> one cosine per index row


def windows(text: str, size: int, stride: int) -> list[str]:
    """Overlapping character windows of a chunk longer than `size` (none for a shorter one)."""
    if len(text) <= size:
        return []
    out, start = [], 0
    while True:
        out.append(text[start:start + size])
        if start + size >= len(text):
            return out
        start += stride


class Patched:
    """The version's vector index answering from `scorer` instead of its stored vectors."""

    def __init__(self, vectors: Any, scorer: Scorer) -> None:
        self.vectors, self.scorer = vectors, scorer
        self.saved = (vectors.search, vectors.cosine)

    def __enter__(self) -> None:
        def search(qvec: np.ndarray, n: int, allowed: Any = None) -> list[tuple[int, float]]:
            s = self.scorer(np.asarray(qvec, np.float32).ravel())
            return [(int(i), float(s[i])) for i in np.argsort(-s)[:n]]

        def cosine(qvec: np.ndarray, rows: Any) -> np.ndarray:
            return self.scorer(np.asarray(qvec, np.float32).ravel())[np.asarray(rows)]

        self.vectors.search, self.vectors.cosine = search, cosine

    def __exit__(self, *exc: object) -> None:
        self.vectors.search, self.vectors.cosine = self.saved


def run(data: Path) -> str:
    from retrieval.embedders import load_embedder, passage_text
    from retrieval.search import search

    embedder = load_embedder()
    pdfs, questions = split_paths("dev")
    recipe, query = shipped()
    store = build(pdfs, recipe, embedder, data)
    ver = store.open()
    n = ver.vectors.ntotal
    rows = ver.chunks.get_rows(list(range(n)))
    titled = recipe.context == "title+heading"
    full = ver.vectors.reconstruct(np.arange(n))
    qvec = {q["id"]: embedder.encode_query(q["question"]) for q in questions}
    table: list[tuple[str, str, float]] = []

    def score(label: str, scorer: Scorer | None, seconds: float = 0.0, vectors: dict | None = None) -> None:
        if scorer is None:
            s, _ = evaluate(store, embedder, questions, query, vectors or qvec)
        else:
            with Patched(ver.vectors, scorer):
                s, _ = evaluate(store, embedder, questions, query, vectors or qvec)
        table.append((label, s.row(), seconds))
        print(label, s.row(), file=sys.stderr, flush=True)

    score("shipped (one vector per chunk, 256 tokens)", None)
    for size, stride, mix in ((300, 150, "max"), (400, 200, "max"), (500, 250, "max"), (500, 250, "half")):
        owners, texts = [], []
        for row, c in enumerate(rows):
            for w in windows(c["text"], size, stride):
                owners.append(row)
                texts.append(passage_text(c["heading"], w, c["title"] if titled else ""))
        t = time.perf_counter()
        wv = embedder.encode(texts)
        seconds = time.perf_counter() - t
        own = np.asarray(owners)

        def scorer(q: np.ndarray, wv: np.ndarray = wv, own: np.ndarray = own, mix: str = mix) -> np.ndarray:
            s = full @ q
            best = np.full(n, -1.0, dtype=np.float32)
            np.maximum.at(best, own, wv @ q)
            top = np.maximum(s, best)
            return top if mix == "max" else np.where(best > -1, (s + top) / 2, s)

        score(f"windows {size}/{stride} chars ({len(texts)} more vectors), "
              f"{'best of chunk and windows' if mix == 'max' else 'half-weighted'}", scorer, seconds)

    by_chunk_id = {c["chunk_id"]: row for row, c in enumerate(rows)}
    for m, beta in ((1, 0.2), (3, 0.2), (3, 0.4), (5, 0.4), (5, 0.7)):
        moved = {}
        for q in questions:
            hits = search(store, embedder, q["question"], query.params(m), query_vector=qvec[q["id"]])
            fb = full[[by_chunk_id[h.chunk_id] for h in hits]].mean(axis=0)
            v = qvec[q["id"]] + beta * fb
            moved[q["id"]] = (v / np.linalg.norm(v)).astype(np.float32)
        score(f"pseudo-relevance feedback, top {m}, beta {beta}", None, vectors=moved)

    texts = [passage_text(c["heading"], c["text"], c["title"] if titled else "") for c in rows]
    timings = {}
    for length in (256, 128):
        e = type(embedder)()
        e.max_seq_length = length
        e.encode(["warm up"])
        t = time.perf_counter()
        vecs = e.encode(texts)
        timings[length] = time.perf_counter() - t
        if length == 128:
            score("passages truncated at 128 tokens", lambda q, v=vecs: v @ q, timings[length])
    ratio = timings[256] / timings[128]
    store.open().chunks.close()

    lines = ["## Dense-side variants on eval/dev (bench/experiments/dense_variants.py)", "",
             f"eval/dev: {len(pdfs) - 2} manuals + the 2 sample manuals, {n} chunks, "
             f"{sum(1 for q in questions if q.get('answerable'))} answerable questions; shipped fusion and "
             "k=5; every row runs `retrieval.search` with the dense side replaced in memory. eval/test "
             "was not used: nothing was adopted.", "",
             "| dense side | hit@1 | hit@5 | MRR | embedding s (windows: the extra vectors; 128 tokens: every chunk) |",
             "|---|---|---|---|---|"]
    lines += [f"| {label} | {row} | {sec:.1f} |" for label, row, sec in table]
    lines += ["", f"Embedding the {n} chunks: 256 tokens {timings[256]:.1f} s, 128 tokens {timings[128]:.1f} s "
              f"({ratio:.2f}x faster).", "",
              "Decision: none adopted. Windows move one question at a time (within 0.012 MRR of shipped) "
              "for 2.3-3.7 times as many vectors; feedback only hurts; truncating at 128 tokens would speed ingest "
              "but costs about 0.05 MRR. The dense side needs a better model, not a different use of this one.",
              "", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="manualqa-dense-") as tmp:
        text = run(Path(tmp) / "dev")
    print(text)
    if not args.no_write:
        write_section(__spec__.name, text)


if __name__ == "__main__":
    main()
