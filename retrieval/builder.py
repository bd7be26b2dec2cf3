"""Ingest orchestration: decide what changed, parse and embed only that, write a new version.

Parsing runs in worker processes (ingest.sandbox.parse_many) fed from a background thread, while
the main thread chunks and embeds each manual as soon as it is parsed, so the embedding model is
kept busy. Unchanged manuals keep their chunks and their vectors (read back from FAISS), so an
ingest of one new manual never re-embeds the others. A version is written under
``indexes/.tmp-<id>/`` and renamed into place only when complete; the caller verifies it and moves
the ACTIVE pointer.
"""

from __future__ import annotations

import os
import queue
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ingest.models import Chunk, ChunkParams, IngestError, PageText, ParsedManual, ParseLimits
from retrieval.manifest import CHUNKS_DB, MANIFEST, VECTORS, build_manifest, manifest_bytes, manual_entry
from retrieval.pointer import TMP_PREFIX, atomic_write_bytes, fsync_dir
from retrieval.types import RetrievalError

Progress = Callable[[str, int, int], None]
# sha256 of a stored original -> its printed page labels, one per page (None: cannot be read)
LabelReader = Callable[[str], "list[str | None] | None"]
PAUSE_ENV = "MANUALQA_TEST_PAUSE_AT"


def pause_point(stage: str) -> None:
    """Test hook: with MANUALQA_TEST_PAUSE_AT=<stage>, stop here so a test can kill -9 the process."""
    if os.environ.get(PAUSE_ENV) == stage:
        print(f"MANUALQA_PAUSED {stage}", file=sys.stderr, flush=True)
        time.sleep(3600)


@dataclass
class IngestReport:
    version: str | None = None  # the new active version, None when nothing changed
    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    chunks: int = 0  # chunks in the resulting active version
    embedded: int = 0  # chunks embedded by this run (re-used ones are not counted)
    pages: int = 0  # pages parsed by this run
    seconds: float = 0.0
    parent: str | None = None
    # why manuals already indexed were chunked and embedded again ("" when they were re-used as is)
    reprocessed: str = ""
    # where the time went: parse_wait (embedding idle, waiting for a parse), embed, write, activate
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def status(self) -> str:
        return "new version" if self.version else "no change"

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["failed"] = [{"file": f, "error": m} for f, m in self.failed]
        data["status"] = self.status
        data["seconds"] = round(self.seconds, 3)
        data["timings"] = {k: round(v, 3) for k, v in self.timings.items()}
        return data


@dataclass
class Entry:
    """One manual as it will be written into a version."""

    parsed: ParsedManual
    chunks: list[Chunk]
    vectors: np.ndarray  # (len(chunks), dim) float32, row i belongs to chunks[i]
    source: Path | None = None  # the original PDF, when it came from this run's input


def failure(path: str | Path, message: str) -> tuple[str, str]:
    """(file, reason) without the file repeated at the start of the reason."""
    text = str(message)
    for prefix in (f"{path}: ", f"{Path(path).name}: "):
        if text.startswith(prefix):
            text = text[len(prefix):]
    return str(path), text


def embedding_info(embedder: Any) -> dict[str, Any]:
    """What the manifest records of the model: its id and weights hash (search refuses another),
    and the setting that loads it again (``model``), so a gateway can search this version with its
    own model after the configured one changed (retrieval.embeddings.spec_of)."""
    return {"model_id": embedder.model_id, "model_hash": embedder.model_hash, "dim": int(embedder.dim),
            "model": str(getattr(embedder, "model", ""))}


def reuse_manual(base: Any, info: dict[str, Any], labels: Sequence[str | None] | None = None) -> Entry:
    """A manual of `base` (an IndexVersion) with its pages, chunks and stored vectors.

    Printed page labels come from `base`; `labels` (one per page) stand in for a base written
    before labels were kept."""
    sha = info["sha256"]
    store = base.chunks
    known = store.page_labels(sha) if store.has_labels else dict(enumerate(labels or [], start=1))
    pages = [PageText(p, store.page_text(sha, p) or "", known.get(p))
             for p in range(1, int(info["page_count"]) + 1)]
    parsed = ParsedManual(sha256=sha, file_name=info["file_name"], title=info["title"],
                          page_count=int(info["page_count"]), size_bytes=int(info.get("size_bytes", 0)),
                          pages=pages, pages_without_text=list(info.get("pages_without_text", [])),
                          outline=[(int(p), str(t)) for p, t in info.get("outline", [])])
    chunks = list(store.chunks_for_manual(sha))
    rows = sorted(store.rows_for_manuals([sha]))
    if len(rows) != len(chunks):
        raise RetrievalError(f"version {base.id}: {info['file_name']} has {len(chunks)} chunks "
                             f"but {len(rows)} rows; run `manualqa index verify`")
    vectors = base.vectors.reconstruct(np.asarray(rows, dtype=np.int64)) if rows else None
    if vectors is None:
        vectors = np.zeros((0, base.vectors.dim), dtype=np.float32)
    return Entry(parsed, chunks, np.asarray(vectors, dtype=np.float32))


def reuse_manuals(base: Any, infos: Sequence[dict[str, Any]], read_labels: LabelReader | None = None,
                  workers: int = 2) -> list[Entry]:
    """Manuals of `base` as they go into the next version (see reuse_manual).

    A base written before the pages table had a label column has no printed page labels; then
    they are read again from the stored originals (`read_labels`: a labels-only sandboxed parse,
    well under a second a manual, `workers` at a time), so the version built on top of it shows
    printed page numbers for the manuals it re-uses too, without re-embedding them.
    """
    relabelled: dict[str, list[str | None] | None] = {}
    if read_labels is not None and infos and not base.chunks.has_labels:
        shas = [info["sha256"] for info in infos]
        with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="pdf-labels") as pool:
            relabelled = dict(zip(shas, pool.map(read_labels, shas), strict=True))
    return [reuse_manual(base, info, relabelled.get(info["sha256"])) for info in infos]


class Embedding:
    """Chunks and embeds manuals, counting chunks so progress can be reported while the model works."""

    def __init__(self, embedder: Any, progress: Progress | None) -> None:
        self.embedder = embedder
        self.progress = progress
        self.done = 0
        self.total = 0
        self.seconds = 0.0

    def entries(self, items: Sequence[tuple[ParsedManual, Path | None]], params: ChunkParams
                ) -> list[Entry | IngestError]:
        """Chunk each manual and embed all their chunks in ONE call (one result per item, in order).

        One call lets the model batch passages of similar length across manuals, which costs less
        padding than one call per manual.
        """
        from ingest.chunker import chunk_manual
        from retrieval.embeddings import passage_text

        results: list[Entry | IngestError] = []
        texts: list[str] = []
        for parsed, source in items:
            chunks = chunk_manual(parsed, params)
            if not chunks:
                results.append(IngestError(f"{parsed.file_name}: no extractable text "
                                           "(scanned PDF without a text layer?)"))
                continue
            results.append(Entry(parsed, chunks, np.zeros((0, 0), dtype=np.float32), source))
            title = params.title_for(parsed.title)
            texts += [passage_text(c.heading, c.text, title) for c in chunks]
        self.total += len(texts)
        before = self.done

        def tick(n: int) -> None:
            if self.progress:
                self.progress("embed", before + n, self.total)

        started = time.perf_counter()
        vectors = np.asarray(self.embedder.encode(texts, progress=tick), dtype=np.float32)
        self.seconds += time.perf_counter() - started
        self.done += len(texts)
        offset = 0
        for entry in results:
            if isinstance(entry, Entry):
                entry.vectors = vectors[offset : offset + len(entry.chunks)]
                offset += len(entry.chunks)
        return results


def parse_in_background(
    paths: Sequence[Path], limits: ParseLimits, workers: int
) -> Iterable[list[tuple[Path, ParsedManual | IngestError]]]:
    """Yield groups of parse results: each group is everything parsed while the consumer was busy.

    A thread keeps the worker processes parsing ahead of the consumer (the embedding model).
    """
    from ingest.sandbox import parse_many

    results: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=2 * max(1, workers))
    stop = threading.Event()

    def put(item: tuple[str, Any]) -> bool:
        while not stop.is_set():
            try:
                results.put(item, timeout=0.2)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in parse_many(list(paths), limits, workers=workers):
                if not put(("item", item)):
                    return  # the consumer gave up; stop parsing
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer thread
            put(("error", exc))
        finally:
            put(("done", None))

    thread = threading.Thread(target=produce, name="manualqa-parse", daemon=True)
    thread.start()
    try:
        finished = False
        while not finished:
            group = []
            kind, value = results.get()  # wait for one, then take whatever else is ready
            while True:
                if kind == "done":
                    finished = True
                    break
                if kind == "error":
                    raise value
                group.append(value)
                try:
                    kind, value = results.get_nowait()
                except queue.Empty:
                    break
            if group:
                yield group
    finally:
        stop.set()
        thread.join(timeout=5)


def write_version(
    indexes_dir: Path,
    version_id: str,
    parent: str | None,
    embedding: dict[str, Any],
    chunk_params: ChunkParams,
    entries: Sequence[Entry],
) -> dict[str, Any]:
    """Write a complete version under a temporary name, then rename it into place."""
    from retrieval.chunkstore import ChunkStore
    from retrieval.vectors import VectorIndex

    tmp = indexes_dir / f"{TMP_PREFIX}{version_id}"
    tmp.mkdir(parents=True)
    store = ChunkStore.create(tmp / CHUNKS_DB)
    offset = 0
    try:
        for entry in entries:
            store.add_manual(entry.parsed)
            rows = list(store.add_chunks(entry.chunks, chunk_params.title_for(entry.parsed.title)))
            if rows != list(range(offset, offset + len(entry.chunks))):
                raise RetrievalError("chunk store rows are not contiguous with vector positions")
            offset += len(entry.chunks)
        store.commit()
    finally:
        store.close()
    pause_point("after_chunks")
    dim = int(embedding["dim"])
    matrix = (np.vstack([e.vectors for e in entries]) if entries
              else np.zeros((0, dim), dtype=np.float32)).astype(np.float32, copy=False)
    if matrix.shape != (offset, dim):
        raise RetrievalError(f"vectors have shape {matrix.shape}, expected ({offset}, {dim})")
    VectorIndex.build(matrix).save(tmp / VECTORS)
    for name in (CHUNKS_DB, VECTORS):
        with open(tmp / name, "rb+") as fh:
            os.fsync(fh.fileno())
    pause_point("after_vectors")
    manuals = [manual_entry(e.parsed, len(e.chunks)) for e in entries]
    manifest = build_manifest(tmp, version_id, parent, embedding, chunk_params, manuals, offset)
    atomic_write_bytes(tmp / MANIFEST, manifest_bytes(manifest))
    fsync_dir(tmp)
    pause_point("after_manifest")
    os.rename(tmp, indexes_dir / version_id)
    fsync_dir(indexes_dir)
    pause_point("before_activate")
    return manifest


def _warm_up(embedder: Any) -> None:
    try:
        embedder.encode(["warm-up"])
    except Exception:  # noqa: BLE001 - the real encode reports the same error where it matters
        pass


def _recipe(chunker: Any) -> dict[str, Any] | None:
    """A manifest's chunker settings as ChunkParams would write them today (None if unreadable)."""
    try:
        return ChunkParams.from_manifest(dict(chunker or {})).to_dict()
    except (TypeError, ValueError):
        return None


def _same_model(base_embedding: dict[str, Any], embedder: Any) -> bool:
    return (base_embedding.get("model_id") == embedder.model_id
            and base_embedding.get("model_hash") == embedder.model_hash)


def collect_entries(
    base: Any,
    paths: Sequence[str | Path],
    embedder: Any,
    chunk_params: ChunkParams,
    limits: ParseLimits,
    progress: Progress | None,
    workers: int,
    rebuild: bool,
    store_original: Callable[[Path, str], None],
    read_labels: LabelReader | None = None,
) -> tuple[list[Entry] | None, IngestReport]:
    """The manuals of the next version (None: nothing changed) and the report so far.

    `base` is the active IndexVersion or None. Manuals are identified by file name: the same name
    with new content replaces the old manual; content already indexed is kept as it is.
    `read_labels` gives kept manuals their printed page labels when `base` predates them.
    """
    from ingest.discover import find_pdfs, sha256_file

    report = IngestReport(parent=base.id if base else None)
    base_manuals: list[dict[str, Any]] = list(base.manifest.get("manuals", [])) if base else []
    # Vectors of two models cannot share an index, and a changed chunk recipe changes what is
    # embedded: then every kept manual is chunked and embedded again, and the report says why.
    if base and rebuild:
        report.reprocessed = "rebuild asked for"
    elif base and not _same_model(base.manifest.get("embedding", {}), embedder):
        old = base.manifest.get("embedding", {})
        report.reprocessed = (f"embedding model changed: {old.get('model_id')} "
                              f"({str(old.get('model_hash'))[:12]}) -> {embedder.model_id} "
                              f"({str(embedder.model_hash)[:12]})")
    elif base and _recipe(base.manifest.get("chunker")) != chunk_params.to_dict():
        report.reprocessed = (f"chunker settings changed: {base.manifest.get('chunker')} -> "
                              f"{chunk_params.to_dict()}")
    reprocess_kept = bool(report.reprocessed)

    pdfs, errors = find_pdfs([Path(p) for p in paths])
    report.failed += [failure(p, msg) for p, msg in errors]
    by_name = {m["file_name"]: m for m in base_manuals}
    base_shas = {m["sha256"] for m in base_manuals}
    names_in_batch: dict[str, str] = {}
    shas_in_batch: set[str] = set()
    to_parse: list[Path] = []
    expected_sha: dict[Path, str] = {}
    for path in pdfs:
        try:
            sha = sha256_file(path)
        except OSError as exc:
            report.failed.append(failure(path, f"cannot read: {exc.strerror or exc}"))
            continue
        if sha in shas_in_batch:
            continue  # the same content given twice
        if names_in_batch.get(path.name, sha) != sha:
            report.failed.append((str(path), f"another file named {path.name} with different content is "
                                  "in this batch; manuals are identified by file name"))
            continue
        names_in_batch[path.name] = sha
        shas_in_batch.add(sha)
        if sha in base_shas:
            try:
                store_original(path, sha)
            except ValueError as exc:
                report.failed.append(failure(path, str(exc)))
                continue
            report.unchanged.append(path.name)
        else:
            to_parse.append(path)
            expected_sha[path] = sha

    # Nothing new: no version is written, even when `base` predates printed page labels. Versions
    # are immutable and an ingest that changes nothing writes nothing; the next version built (a
    # new or changed manual, a removal, `--rebuild`) reads the labels again (reuse_manuals).
    if not to_parse and not reprocess_kept:
        return None, report

    embedding = Embedding(embedder, progress)
    if to_parse:  # load the model while the first parse runs, not after it
        threading.Thread(target=_warm_up, args=(embedder,), name="manualqa-warm", daemon=True).start()
    fresh: dict[str, Entry] = {}
    done = 0
    waited = time.perf_counter()
    to_parse.sort(key=lambda p: p.stat().st_size)  # the first, smallest parse starts the model soonest
    for group in parse_in_background(to_parse, limits, workers):
        report.timings["parse_wait"] = report.timings.get("parse_wait", 0.0) + time.perf_counter() - waited
        done += len(group)
        if progress:
            progress("parse", done, len(to_parse))
        ready: list[tuple[ParsedManual, Path | None]] = []
        for path, result in group:
            try:
                if isinstance(result, BaseException):
                    raise result
                if result.sha256 != expected_sha.get(Path(path)):
                    raise IngestError(f"{Path(path).name} changed while it was being ingested")
                store_original(Path(path), result.sha256)
                ready.append((result, Path(path)))
            except (IngestError, ValueError) as exc:
                report.failed.append(failure(path, str(exc)))
        for (parsed, path), entry in zip(ready, embedding.entries(ready, chunk_params), strict=True):
            if isinstance(entry, IngestError):
                report.failed.append(failure(path or parsed.file_name, str(entry)))
                continue
            fresh[parsed.sha256] = entry
            report.pages += parsed.page_count
            (report.changed if parsed.file_name in by_name else report.added).append(parsed.file_name)
        waited = time.perf_counter()
    pause_point("after_parse")

    if not fresh and not reprocess_kept:
        return None, report
    replaced = {e.parsed.file_name for e in fresh.values()}
    entries = list(fresh.values())
    kept = reuse_manuals(base, [info for info in base_manuals if info["file_name"] not in replaced],
                         read_labels, workers)
    if reprocess_kept and kept:
        redone = embedding.entries([(k.parsed, None) for k in kept], chunk_params)
        for k, entry in zip(kept, redone, strict=True):
            if isinstance(entry, IngestError):  # keep nothing half-done
                raise RetrievalError(f"cannot re-chunk {k.parsed.file_name}: {entry}")
        kept = [e for e in redone if isinstance(e, Entry)]
    entries += kept
    report.embedded = embedding.done
    report.timings["embed"] = embedding.seconds
    entries.sort(key=lambda e: (e.parsed.file_name, e.parsed.sha256))
    return entries, report
