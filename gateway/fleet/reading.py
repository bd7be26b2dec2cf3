"""Reading an index archive as hostile input: headers checked before data and reads capped
(gateway.fleet.tar_guard), the signed manifest checked against every member, the whole file hashed
before anything is written.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import tarfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TypedDict

from gateway import JSONObject
from gateway.fleet import FleetError
from gateway.fleet.format import (
    BLOCK,
    FORMAT,
    FORMAT_VERSION,
    MANIFEST_NAME,
    MANUAL_RE,
    MAX_MANIFEST_BYTES,
    SHA_RE,
    SIGNATURE_BYTES,
    SIGNATURE_NAME,
    STREAM_SLACK,
    VERSION_FILES,
    VERSION_RE,
)
from gateway.fleet.signing import verify_signature
from gateway.fleet.tar_guard import Overrun, check_header, opened, read_exact
from retrieval.manifest import MANIFEST


class FileEntry(TypedDict):
    """One payload file of the signed manifest, as checked: its member name, size and sha256."""

    name: str
    size: int
    sha256: str


def embedding_of(manifest: JSONObject) -> JSONObject:
    """The manifest's `embedding` record (model_id, model_hash): an object in a checked manifest."""
    found = manifest.get("embedding")
    return found if isinstance(found, dict) else {}


def _validate_manifest(manifest: object, max_bytes: int) -> tuple[str, dict[str, FileEntry]]:
    """(version, {member name: entry}) of a signed MANIFEST.json, or FleetError saying what is off."""
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise FleetError("MANIFEST.json is not a manualqa index archive manifest")
    if manifest.get("format_version") != FORMAT_VERSION:
        raise FleetError(f"archive format version {manifest.get('format_version')!r} is not supported by this "
                         f"gateway (it reads version {FORMAT_VERSION}); upgrade manualqa")
    version = str(manifest.get("version") or "")
    if not VERSION_RE.match(version):
        raise FleetError(f"archive names no valid index version ({version!r})")
    emb = manifest.get("embedding")
    if not isinstance(emb, dict) or not emb.get("model_id") or not emb.get("model_hash"):
        raise FleetError(f"archive of {version} does not record its embedding model")
    entries = manifest.get("files")
    if not isinstance(entries, list):
        raise FleetError("MANIFEST.json lists no files")
    files: dict[str, FileEntry] = {}
    allowed = {f"payload/indexes/{version}/{n}" for n in VERSION_FILES}
    for entry in entries:
        name = entry.get("name") if isinstance(entry, dict) else None
        if not isinstance(name, str) or (name not in allowed and not MANUAL_RE.match(name)):
            raise FleetError(f"MANIFEST.json lists {name!r}, which has no place in an index archive")
        size, sha = entry.get("size"), entry.get("sha256")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0 or not SHA_RE.match(str(sha)):
            raise FleetError(f"MANIFEST.json: the entry of {name} has no valid size and sha256")
        manual = MANUAL_RE.match(name)
        if manual and manual.group(1) != sha:
            raise FleetError(f"MANIFEST.json: {name} is named for another sha256 than its own")
        if name in files:
            raise FleetError(f"MANIFEST.json lists {name} twice")
        files[name] = {"name": name, "size": size, "sha256": str(sha)}
    missing = sorted(allowed - files.keys())
    if missing:
        raise FleetError(f"MANIFEST.json does not list {', '.join(missing)}")
    total = sum(e["size"] for e in files.values())
    if total > max_bytes:
        raise FleetError(f"archive declares {total} bytes of payload, over this gateway's import cap of "
                         f"{max_bytes} bytes (raise it with --max-size if this is expected; else a tar/zip bomb?)")
    return version, files


def _check_model(manifest: JSONObject, version: str, model_id: str, model_hash: str) -> None:
    emb = embedding_of(manifest)
    if emb["model_id"] != model_id or emb["model_hash"] != model_hash:
        raise FleetError(
            f"archive version {version} was built with embedding model {emb['model_id']} "
            f"(sha256 {str(emb['model_hash'])[:12]}); this gateway runs {model_id} (sha256 {model_hash[:12]}): "
            "its vectors would not match the questions. Configure the same model, or re-ingest the manuals here")


@dataclass
class Walked:
    manifest: JSONObject
    signer: str
    version: str
    files: dict[str, FileEntry]
    inner: JSONObject = field(default_factory=dict)


def walk(path: Path, data_dir: Path, max_bytes: int, model: tuple[str, str],
          sink: Path | None = None) -> Walked:
    """Read the whole archive once, checking everything; with `sink`, also write the payload there.

    Every member's header is judged before its data is read; the signature before any payload.
    """
    walked: Walked | None = None
    seen: set[str] = set()
    body = b""
    limit = max_bytes + STREAM_SLACK
    try:
        with opened(path, limit) as tf:
            position = 0
            while (m := tf.next()) is not None:
                check_header(m)
                if position == 0:
                    if m.name != MANIFEST_NAME:
                        raise FleetError(f"archive starts with {m.name!r}, not {MANIFEST_NAME}: "
                                         "not a manualqa index archive")
                    if m.size > MAX_MANIFEST_BYTES:
                        raise FleetError(f"{MANIFEST_NAME} is {m.size} bytes (at most {MAX_MANIFEST_BYTES}): "
                                         "refusing (a tar/zip bomb?)")
                    body = read_exact(tf, m)
                elif position == 1:
                    if m.name != SIGNATURE_NAME or m.size != SIGNATURE_BYTES:
                        raise FleetError(f"archive has no {SIGNATURE_NAME} after {MANIFEST_NAME}: it is not signed")
                    try:
                        manifest = json.loads(body.decode("utf-8"))
                    except (ValueError, RecursionError) as exc:  # not yet verified: any bytes at all
                        raise FleetError(f"{MANIFEST_NAME} is not JSON ({exc})") from exc
                    signer = str(manifest.get("key_id") or "") if isinstance(manifest, dict) else ""
                    verify_signature(data_dir, signer, body, read_exact(tf, m))
                    version, files = _validate_manifest(manifest, max_bytes)
                    _check_model(manifest, version, *model)
                    walked = Walked(manifest, signer, version, files)
                else:
                    assert walked is not None
                    entry = walked.files.get(m.name)
                    if entry is None:
                        raise FleetError(f"archive member {m.name!r} is not listed in the signed manifest")
                    if m.name in seen:
                        raise FleetError(f"archive member {m.name!r} appears twice")
                    if m.size > entry["size"]:
                        raise FleetError(f"archive member {m.name} is {m.size} bytes, more than the {entry['size']} "
                                         "its signed manifest declares: refusing (a tar/zip bomb?)")
                    if m.size != entry["size"]:
                        raise FleetError(f"archive member {m.name} is {m.size} bytes; "
                                         f"its signed manifest declares {entry['size']}")
                    seen.add(m.name)
                    keep = m.name == f"payload/indexes/{walked.version}/{MANIFEST}"
                    if keep and m.size > MAX_MANIFEST_BYTES:
                        raise FleetError(f"{m.name} is {m.size} bytes (at most {MAX_MANIFEST_BYTES})")
                    digest, kept = copy_member(tf, m, sink, keep)
                    if digest != entry["sha256"]:
                        raise FleetError(f"archive member {m.name}: sha256 does not match the signed manifest "
                                         "(altered or damaged in transit)")
                    if keep:
                        walked.inner = parse_inner(kept, m.name)
                position += 1
    except Overrun as exc:
        raise FleetError(f"{path.name}: refused before reading further: {exc} (a tar/zip bomb?)") from exc
    except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise FleetError(f"{path.name} is truncated or damaged ({exc})") from exc
    if walked is None:
        raise FleetError(f"{path.name} is truncated or not a manualqa index archive: no signed {MANIFEST_NAME}")
    missing = sorted(walked.files.keys() - seen)
    if missing:
        raise FleetError(f"{path.name} is truncated or incomplete: {len(missing)} file(s) of its signed manifest "
                         f"are missing ({', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''})")
    check_inner(walked)
    return walked


def copy_member(tf: tarfile.TarFile, m: tarfile.TarInfo, sink: Path | None, keep: bool) -> tuple[str, bytes]:
    """Hash one member's data in blocks (and write it under `sink`); returns (sha256, data if `keep`)."""
    src = tf.extractfile(m)
    assert src is not None
    digest = hashlib.sha256()
    kept = bytearray()
    out: IO[bytes] | None = None
    if sink is not None:
        target = sink / m.name.removeprefix("payload/")
        if not target.resolve().is_relative_to(sink.resolve()):  # names were checked; this is belt and braces
            raise FleetError(f"archive member {m.name!r} would land outside the import directory")
        target.parent.mkdir(parents=True, exist_ok=True)
        out = open(target, "xb")  # closed in the finally below
    try:
        remaining = m.size
        while remaining:
            block = src.read(min(BLOCK, remaining))
            if not block:
                raise tarfile.ReadError("unexpected end of data")
            remaining -= len(block)
            digest.update(block)
            if keep:
                kept += block
            if out is not None:
                out.write(block)
        if out is not None:
            out.flush()
            os.fsync(out.fileno())
    finally:
        if out is not None:
            out.close()
    return digest.hexdigest(), bytes(kept)


def parse_inner(data: bytes, name: str) -> JSONObject:
    try:
        inner = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        raise FleetError(f"{name} is not JSON ({exc})") from exc
    if not isinstance(inner, dict):
        raise FleetError(f"{name} is not a JSON object")
    return inner


def check_inner(walked: Walked) -> None:
    """The version's own manifest must agree with the signed one: same id, model and manuals."""
    inner, version = walked.inner, walked.version
    if inner.get("id") != version:
        raise FleetError(f"the version manifest in the archive is of {inner.get('id')!r}, not {version}")
    emb, outer = inner.get("embedding"), embedding_of(walked.manifest)
    if not isinstance(emb, dict) or (emb.get("model_id"), emb.get("model_hash")) != (outer["model_id"],
                                                                                     outer["model_hash"]):
        raise FleetError(f"the version manifest of {version} names another embedding model than the archive's")
    manuals = inner.get("manuals")
    if not isinstance(manuals, list) or not all(isinstance(m, dict) for m in manuals):
        raise FleetError(f"the version manifest of {version} has no valid list of manuals")
    wanted = {str(m.get("sha256")) for m in manuals if isinstance(m, dict)}
    shipped = {m.group(1) for m in map(MANUAL_RE.match, walked.files) if m}
    if wanted - shipped:
        raise FleetError(f"archive of {version} lacks the original PDF of manual(s) "
                         f"{', '.join(sorted(s[:12] for s in wanted - shipped))}")
    if shipped - wanted:
        raise FleetError(f"archive of {version} holds PDFs its version does not cite "
                         f"({', '.join(sorted(s[:12] for s in shipped - wanted))})")


# -- import --------------------------------------------------------------------------------------
