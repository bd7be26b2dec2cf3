"""Ingest orchestration: decide what changed, parse and embed only that, write a new version.

Parsing runs in worker processes fed from a background thread (retrieval.background_parse), while
the main thread chunks and embeds each manual as soon as it is parsed, so the embedding model is
kept busy. Unchanged manuals keep their chunks and their vectors (read back from FAISS), so an
ingest of one new manual never re-embeds the others. A version is written under
``indexes/.tmp-<id>/`` and renamed into place only when complete; the caller verifies it and moves
the ACTIVE pointer.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ingest.models import ChunkParams, IngestError, ParsedManual, ParseLimits
from retrieval.background_parse import parse_in_background
from retrieval.companion import companion_info, describe, same_companion
from retrieval.entries import (
    Embedding,
    Entry,
    LabelReader,
    Progress,
    embedding_info,
    reuse_manual,
    reuse_manuals,
)
from retrieval.ingest_report import IngestReport, failure
from retrieval.types import RetrievalError
from retrieval.writer import pause_point, write_version

if TYPE_CHECKING:
    from retrieval.embedders.base import Embedder
    from retrieval.index_version import IndexVersion

__all__ = ["Embedding", "Entry", "IngestReport", "LabelReader", "Progress", "collect_entries", "embedding_info",
           "failure", "parse_in_background", "pause_point", "reuse_manual", "reuse_manuals", "write_version"]


def _warm_up(embedder: Embedder) -> None:
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


def _same_model(base_embedding: Mapping[str, object], embedder: Embedder) -> bool:
    return bool(base_embedding.get("model_id") == embedder.model_id
                and base_embedding.get("model_hash") == embedder.model_hash)


def collect_entries(
    base: IndexVersion | None,
    paths: Sequence[str | Path],
    embedder: Embedder,
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
    from ingest.ocr import unread_notes
    from ingest.ocr_languages import languages_arrived

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
    # A companion embedder (retrieval.companion) set, changed or removed: the kept manuals keep their chunks
    # and their vectors, and are embedded with the new companion (or lose the old one's vectors).
    base_companion = base.manifest.get("companion") if base else None
    recompanion = bool(base) and not reprocess_kept and not same_companion(base_companion, embedder)
    if recompanion:
        wanted = companion_info(embedder)
        report.reprocessed = (f"companion embedder changed: {describe(base_companion)} -> {describe(wanted)}: "
                              + ("every kept manual is embedded with it (its other vectors are re-used)" if wanted
                                 else "the kept manuals' companion vectors are dropped"))

    pdfs, errors = find_pdfs([Path(p) for p in paths])
    report.failed += [failure(p, msg) for p, msg in errors]
    by_name = {m["file_name"]: m for m in base_manuals}
    base_shas = {m["sha256"] for m in base_manuals}
    ocr_arrived = languages_arrived(base_manuals)
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
        if sha in ocr_arrived:  # parsed again below, its scanned pages now read in their language
            report.unread.append((str(path), f"scanned pages read again: {ocr_arrived[sha]} installed since"))
        if sha in base_shas and sha not in ocr_arrived:
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
    if not to_parse and not reprocess_kept and not recompanion:
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
        for (parsed, source), entry in zip(ready, embedding.entries(ready, chunk_params), strict=True):
            if isinstance(entry, IngestError):
                report.failed.append(failure(source or parsed.file_name, str(entry)))
                continue
            fresh[parsed.sha256] = entry
            notes = unread_notes(parsed.unread, parsed.ocr_engine, len(parsed.ocr))
            report.unread += [(str(source or parsed.file_name), note) for note in notes]
            report.pages += parsed.page_count
            (report.changed if parsed.file_name in by_name else report.added).append(parsed.file_name)
        waited = time.perf_counter()
    pause_point("after_parse")

    if not fresh and not reprocess_kept and not recompanion:
        return None, report
    replaced = {e.parsed.file_name for e in fresh.values()}
    entries = list(fresh.values())
    kept = reuse_manuals(base, [info for info in base_manuals if info["file_name"] not in replaced],
                         read_labels, workers) if base else []  # no base: no manuals to keep
    if reprocess_kept and kept:
        redone = embedding.entries([(k.parsed, None) for k in kept], chunk_params)
        for k, entry in zip(kept, redone, strict=True):
            if isinstance(entry, IngestError):  # keep nothing half-done
                raise RetrievalError(f"cannot re-chunk {k.parsed.file_name}: {entry}")
        kept = [e for e in redone if isinstance(e, Entry)]
    else:  # kept from a version written before sentence vectors were stored: embed them once now
        started = time.perf_counter()
        embedding.sentences([e for e in kept if not e.sentence_vectors or any(v is None for v in e.sentence_vectors)])
        embedding.seconds += time.perf_counter() - started
        if recompanion:
            embedding.companion(kept, chunk_params)
        else:  # kept from a version written before the companion's sentence vectors were: embedded once now
            started = time.perf_counter()
            embedding.companion_sentences([e for e in kept if e.companion_vectors is not None and any(
                v is None and c.language not in ("", "en")
                for c, v in zip(e.chunks, e.companion_sentence_vectors or [None] * len(e.chunks), strict=True))])
            embedding.seconds += time.perf_counter() - started
    entries += kept
    report.embedded = embedding.done
    report.timings["embed"] = embedding.seconds
    entries.sort(key=lambda e: (e.parsed.file_name, e.parsed.sha256))
    return entries, report
