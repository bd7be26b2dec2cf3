"""One index version as one signed file: export it from one gateway, import it into another.

The archive is a plain or gzip tar (USTAR) of, in this order::

    MANIFEST.json                          format, version id, embedding model, signer key id, and a
                                           sha256 + size for every payload member
    MANIFEST.sig                           Ed25519 signature over the exact bytes of MANIFEST.json
    payload/indexes/<version>/manifest.json, chunks.db, vectors.faiss
    payload/manuals/<sha256>.pdf           every original the version cites

Import trusts nothing in the file until the signature checks out against a key in
`signing/trusted/`, and reads it as hostile: every member header is checked (name, type, size
against the signed manifest, a cap on the total) before any of its data is read, reads from the
tar stream are capped so a header cannot make it allocate or decompress gigabytes, and the whole
archive is read and hashed once before anything is written. Only then, under the index lock, is it
extracted into a temporary directory inside the data directory (same filesystem), hashed again,
verified as a version, and moved into place with renames. `ACTIVE` is never touched: activation
stays an explicit step, so QA can replay the version first. Any failure removes the temporary
directory; a crash leaves only a `.tmp-` directory that the next index operation clears.

Importing a version that is already here with the same content is a no-op (status
"already present"), so an OTA tool may retry an install; the same version id with other content
is refused (versions are immutable).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import tarfile
import tempfile
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from io import BytesIO
from pathlib import Path
from typing import IO, Any

from gateway.fleet import FleetError
from gateway.fleet.signing import private_key, verify_signature
from gateway.records.db import utcnow
from ingest.discover import sha256_file
from retrieval.manifest import CHUNKS_DB, MANIFEST, VECTORS, read_manifest, tool_version, verify_version_dir
from retrieval.pointer import TMP_PREFIX, fsync_dir, remove_tree
from retrieval.types import RetrievalError
from retrieval.versions import IndexStore

FORMAT = "manualqa-index-archive"
FORMAT_VERSION = 1
MANIFEST_NAME = "MANIFEST.json"
SIGNATURE_NAME = "MANIFEST.sig"
SIGNATURE_BYTES = 64  # Ed25519
DEFAULT_MAX_BYTES = 4 << 30  # payload cap on import; the CLI's --max-size raises it
MAX_MANIFEST_BYTES = 4 << 20  # MANIFEST.json and the version's manifest.json are held in memory
MAX_READ = 8 << 20  # no single read from the tar stream is larger (tar pax/GNU header bombs)
STREAM_SLACK = 64 << 20  # headers and the manifest on top of the payload cap
_BLOCK = 1 << 20
_VERSION_FILES = (MANIFEST, CHUNKS_DB, VECTORS)
_VERSION_RE = re.compile(r"^v\d{8}T\d{6}-[0-9a-f]{6}$")  # as retrieval.versions names them
_MANUAL_RE = re.compile(r"^payload/manuals/([0-9a-f]{64})\.pdf$")
_SHA_RE = re.compile(r"^[0-9a-f]{64}$")
_OTHER_COMPRESSION = {b"BZh": "bzip2", b"\xfd7zXZ": "xz", b"\x28\xb5\x2f\xfd": "zstd", b"PK\x03\x04": "zip"}

__all__ = ["DEFAULT_MAX_BYTES", "FORMAT", "FORMAT_VERSION", "check_archive", "export_version", "import_archive"]


# -- export ------------------------------------------------------------------------------------
def _manifest_json(data: dict[str, Any]) -> bytes:
    return (json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


class _HashingReader:
    """Feeds tarfile a file while hashing it: what went into the archive is what was signed."""

    def __init__(self, fh: IO[bytes]) -> None:
        self._fh = fh
        self.digest = hashlib.sha256()

    def read(self, n: int = -1) -> bytes:
        data = self._fh.read(n)
        self.digest.update(data)
        return data


def export_version(store: IndexStore, version: str, out: Path, key: str | None = None, *,
                   compress: bool = False, overwrite: bool = False) -> dict[str, Any]:
    """Write `version` with its original PDFs to `out`, signed with this gateway's key `key`.

    The version must pass `verify` first: a fleet must never receive a damaged index.
    """
    out = Path(out)
    if out.exists() and not overwrite:
        raise FleetError(f"{out} already exists; choose another file name or overwrite it (--force)")
    try:
        problems = store.verify(version)
    except RetrievalError as exc:
        raise FleetError(f"cannot export: {exc}") from exc
    if problems:
        raise FleetError(f"version {version} fails verification, not exported: {'; '.join(problems)}")
    version_dir = store.indexes_dir / version
    inner = read_manifest(version_dir)
    signer, private = private_key(store.data_dir, key)

    sources: list[tuple[str, Path]] = [(f"payload/indexes/{version}/{n}", version_dir / n) for n in _VERSION_FILES]
    for man in inner.get("manuals") or []:
        try:
            pdf = store.manual_pdf(str(man.get("sha256")))
        except RetrievalError as exc:
            raise FleetError(f"cannot export {version}: {exc}") from exc
        sources.append((f"payload/manuals/{pdf.name}", pdf))
    files = []
    for name, path in sources:
        digest = sha256_file(path)
        manual = _MANUAL_RE.match(name)
        if manual and digest != manual.group(1):
            raise FleetError(f"cannot export {version}: the stored original {path} is damaged (sha256 {digest[:12]})")
        files.append({"name": name, "sha256": digest, "size": path.stat().st_size})
    emb = inner.get("embedding") or {}
    manifest = {
        "format": FORMAT, "format_version": FORMAT_VERSION, "version": version, "created_at": utcnow(),
        "key_id": signer, "tool": {"name": "manualqa", "version": tool_version()},
        "embedding": {"model_id": emb.get("model_id"), "model_hash": emb.get("model_hash"), "dim": emb.get("dim")},
        "chunk_count": inner.get("chunk_count"),
        "manuals": [{"sha256": m.get("sha256"), "file_name": m.get("file_name"), "title": m.get("title")}
                    for m in inner.get("manuals") or []],
        "files": files,
    }
    body = _manifest_json(manifest)
    signature = private.sign(body)

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f"{TMP_PREFIX}{out.name}.{os.getpid()}")
    mtime = int(time.time())

    def info(name: str, size: int) -> tarfile.TarInfo:
        ti = tarfile.TarInfo(name)
        ti.size, ti.mtime, ti.mode, ti.uid, ti.gid, ti.uname, ti.gname = size, mtime, 0o644, 0, 0, "", ""
        return ti

    try:
        with open(tmp, "wb") as fh:
            with tarfile.open(fileobj=fh, mode="w:gz" if compress else "w:", format=tarfile.USTAR_FORMAT) as tf:
                tf.addfile(info(MANIFEST_NAME, len(body)), BytesIO(body))
                tf.addfile(info(SIGNATURE_NAME, len(signature)), BytesIO(signature))
                for (name, path), entry in zip(sources, files, strict=True):
                    with open(path, "rb") as src:
                        reader = _HashingReader(src)
                        tf.addfile(info(name, entry["size"]), reader)  # type: ignore[arg-type]
                    if reader.digest.hexdigest() != entry["sha256"]:
                        raise FleetError(f"{path} changed while it was being exported; try again")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, out)
    except FleetError:
        raise
    except (OSError, ValueError, tarfile.TarError) as exc:
        raise FleetError(f"cannot write {out}: {exc}") from exc
    finally:
        tmp.unlink(missing_ok=True)
    fsync_dir(out.parent)
    return {"version": version, "file": str(out), "bytes": out.stat().st_size, "sha256": sha256_file(out),
            "key_id": signer, "manuals": len(sources) - len(_VERSION_FILES),
            "payload_bytes": sum(f["size"] for f in files), "compressed": compress,
            "embedding": manifest["embedding"]}


# -- reading a hostile archive -------------------------------------------------------------------
class _Overrun(Exception):
    """The tar stream asked for more than the caps allow (raised inside tarfile, turned into FleetError)."""


class _Capped:
    """The (decompressed) tar stream, refusing any read or seek past `limit` and any huge single read."""

    def __init__(self, raw: IO[bytes], limit: int) -> None:
        self._raw = raw
        self._limit = limit

    def tell(self) -> int:
        return self._raw.tell()

    def seek(self, offset: int, whence: int = 0) -> int:
        target = offset if whence == 0 else self._raw.tell() + offset if whence == 1 else None
        if target is None or target > self._limit:
            raise _Overrun(f"the tar stream runs past {self._limit} bytes")
        return self._raw.seek(target)

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0 or n > MAX_READ:
            raise _Overrun(f"a header asks for a {n}-byte read (more than {MAX_READ})")
        if self._raw.tell() + n > self._limit:
            raise _Overrun(f"the tar stream runs past {self._limit} bytes")
        return self._raw.read(n)


@contextmanager
def _opened(path: Path, limit: int) -> Iterator[tarfile.TarFile]:
    """The archive as a TarFile over a capped stream; only plain tar and gzip are accepted."""
    try:
        fh = open(path, "rb")
    except OSError as exc:
        raise FleetError(f"cannot read archive {path}: {exc.strerror or exc}") from exc
    with fh:
        head = fh.read(8)
        fh.seek(0)
        for magic, kind in _OTHER_COMPRESSION.items():
            if head.startswith(magic):
                raise FleetError(f"{path.name} is a {kind} file; an index archive is a plain tar or a tar.gz")
        size = os.fstat(fh.fileno()).st_size
        gzipped = head.startswith(b"\x1f\x8b")
        if not gzipped and size > limit:
            raise FleetError(f"{path.name} is {size} bytes, over this gateway's import cap of {limit} bytes "
                             "(raise it with --max-size if this is expected)")
        stream: IO[bytes] = gzip.GzipFile(fileobj=fh, mode="rb") if gzipped else fh
        try:
            try:
                tf = tarfile.open(fileobj=_Capped(stream, limit), mode="r:")  # type: ignore[call-overload]
            except _Overrun as exc:
                raise FleetError(f"{path.name}: refused before reading further: {exc} (a tar/zip bomb?)") from exc
            except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
                raise FleetError(f"{path.name} is not a manualqa index archive (a tar or tar.gz file): "
                                 f"{exc}") from exc
            with tf:
                yield tf
        finally:
            if gzipped:
                stream.close()


def _kind(m: tarfile.TarInfo) -> str:
    for test, kind in ((m.issym, "a symbolic link"), (m.islnk, "a hard link"), (m.isdir, "a directory"),
                       (m.ischr, "a character device"), (m.isblk, "a block device"), (m.isfifo, "a FIFO")):
        if test():
            return kind
    return f"of tar type {m.type!r}"


def _check_header(m: tarfile.TarInfo) -> None:
    """Refuse a member by its header alone: before its data is read, and long before anything is written."""
    name = m.name
    if name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", name):
        raise FleetError(f"archive member {name!r} has an absolute path; refusing the archive")
    if ".." in re.split(r"[/\\]", name):
        raise FleetError(f"archive member {name!r} contains '..' (path traversal); refusing the archive")
    if any(ord(c) < 32 for c in name):
        raise FleetError(f"archive member {name!r} has control characters in its name; refusing the archive")
    if not m.isreg():
        raise FleetError(f"archive member {name!r} is {_kind(m)}; an index archive holds regular files only")


def _validate_manifest(manifest: Any, max_bytes: int) -> tuple[str, dict[str, dict[str, Any]]]:
    """(version, {member name: entry}) of a signed MANIFEST.json, or FleetError saying what is off."""
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise FleetError("MANIFEST.json is not a manualqa index archive manifest")
    if manifest.get("format_version") != FORMAT_VERSION:
        raise FleetError(f"archive format version {manifest.get('format_version')!r} is not supported by this "
                         f"gateway (it reads version {FORMAT_VERSION}); upgrade manualqa")
    version = str(manifest.get("version") or "")
    if not _VERSION_RE.match(version):
        raise FleetError(f"archive names no valid index version ({version!r})")
    emb = manifest.get("embedding")
    if not isinstance(emb, dict) or not emb.get("model_id") or not emb.get("model_hash"):
        raise FleetError(f"archive of {version} does not record its embedding model")
    entries = manifest.get("files")
    if not isinstance(entries, list):
        raise FleetError("MANIFEST.json lists no files")
    files: dict[str, dict[str, Any]] = {}
    allowed = {f"payload/indexes/{version}/{n}" for n in _VERSION_FILES}
    for entry in entries:
        name = entry.get("name") if isinstance(entry, dict) else None
        if not isinstance(name, str) or (name not in allowed and not _MANUAL_RE.match(name)):
            raise FleetError(f"MANIFEST.json lists {name!r}, which has no place in an index archive")
        size, sha = entry.get("size"), entry.get("sha256")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0 or not _SHA_RE.match(str(sha)):
            raise FleetError(f"MANIFEST.json: the entry of {name} has no valid size and sha256")
        manual = _MANUAL_RE.match(name)
        if manual and manual.group(1) != sha:
            raise FleetError(f"MANIFEST.json: {name} is named for another sha256 than its own")
        if name in files:
            raise FleetError(f"MANIFEST.json lists {name} twice")
        files[name] = entry
    missing = sorted(allowed - files.keys())
    if missing:
        raise FleetError(f"MANIFEST.json does not list {', '.join(missing)}")
    total = sum(int(e["size"]) for e in files.values())
    if total > max_bytes:
        raise FleetError(f"archive declares {total} bytes of payload, over this gateway's import cap of "
                         f"{max_bytes} bytes (raise it with --max-size if this is expected; else a tar/zip bomb?)")
    return version, files


def _check_model(manifest: dict[str, Any], version: str, model_id: str, model_hash: str) -> None:
    emb = manifest["embedding"]
    if emb["model_id"] != model_id or emb["model_hash"] != model_hash:
        raise FleetError(
            f"archive version {version} was built with embedding model {emb['model_id']} "
            f"(sha256 {str(emb['model_hash'])[:12]}); this gateway runs {model_id} (sha256 {model_hash[:12]}): "
            "its vectors would not match the questions. Configure the same model, or re-ingest the manuals here")


@dataclass
class _Walked:
    manifest: dict[str, Any]
    signer: str
    version: str
    files: dict[str, dict[str, Any]]
    inner: dict[str, Any] = field(default_factory=dict)


def _read_exact(tf: tarfile.TarFile, m: tarfile.TarInfo) -> bytes:
    fh = tf.extractfile(m)
    assert fh is not None  # a regular file (checked)
    data = fh.read(m.size)
    if len(data) != m.size:
        raise tarfile.ReadError("unexpected end of data")
    return data


def _walk(path: Path, data_dir: Path, max_bytes: int, model: tuple[str, str],
          sink: Path | None = None) -> _Walked:
    """Read the whole archive once, checking everything; with `sink`, also write the payload there.

    Every member's header is judged before its data is read; the signature before any payload.
    """
    walked: _Walked | None = None
    seen: set[str] = set()
    body = b""
    limit = max_bytes + STREAM_SLACK
    try:
        with _opened(path, limit) as tf:
            position = 0
            while (m := tf.next()) is not None:
                _check_header(m)
                if position == 0:
                    if m.name != MANIFEST_NAME:
                        raise FleetError(f"archive starts with {m.name!r}, not {MANIFEST_NAME}: "
                                         "not a manualqa index archive")
                    if m.size > MAX_MANIFEST_BYTES:
                        raise FleetError(f"{MANIFEST_NAME} is {m.size} bytes (at most {MAX_MANIFEST_BYTES}): "
                                         "refusing (a tar/zip bomb?)")
                    body = _read_exact(tf, m)
                elif position == 1:
                    if m.name != SIGNATURE_NAME or m.size != SIGNATURE_BYTES:
                        raise FleetError(f"archive has no {SIGNATURE_NAME} after {MANIFEST_NAME}: it is not signed")
                    try:
                        manifest = json.loads(body.decode("utf-8"))
                    except (ValueError, RecursionError) as exc:  # not yet verified: any bytes at all
                        raise FleetError(f"{MANIFEST_NAME} is not JSON ({exc})") from exc
                    signer = str(manifest.get("key_id") or "") if isinstance(manifest, dict) else ""
                    verify_signature(data_dir, signer, body, _read_exact(tf, m))
                    version, files = _validate_manifest(manifest, max_bytes)
                    _check_model(manifest, version, *model)
                    walked = _Walked(manifest, signer, version, files)
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
                    digest, kept = _copy_member(tf, m, sink, keep)
                    if digest != entry["sha256"]:
                        raise FleetError(f"archive member {m.name}: sha256 does not match the signed manifest "
                                         "(altered or damaged in transit)")
                    if keep:
                        walked.inner = _parse_inner(kept, m.name)
                position += 1
    except _Overrun as exc:
        raise FleetError(f"{path.name}: refused before reading further: {exc} (a tar/zip bomb?)") from exc
    except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise FleetError(f"{path.name} is truncated or damaged ({exc})") from exc
    if walked is None:
        raise FleetError(f"{path.name} is truncated or not a manualqa index archive: no signed {MANIFEST_NAME}")
    missing = sorted(walked.files.keys() - seen)
    if missing:
        raise FleetError(f"{path.name} is truncated or incomplete: {len(missing)} file(s) of its signed manifest "
                         f"are missing ({', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''})")
    _check_inner(walked)
    return walked


def _copy_member(tf: tarfile.TarFile, m: tarfile.TarInfo, sink: Path | None, keep: bool) -> tuple[str, bytes]:
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
            block = src.read(min(_BLOCK, remaining))
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


def _parse_inner(data: bytes, name: str) -> dict[str, Any]:
    try:
        inner = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        raise FleetError(f"{name} is not JSON ({exc})") from exc
    if not isinstance(inner, dict):
        raise FleetError(f"{name} is not a JSON object")
    return inner


def _check_inner(walked: _Walked) -> None:
    """The version's own manifest must agree with the signed one: same id, model and manuals."""
    inner, version = walked.inner, walked.version
    if inner.get("id") != version:
        raise FleetError(f"the version manifest in the archive is of {inner.get('id')!r}, not {version}")
    emb, outer = inner.get("embedding"), walked.manifest["embedding"]
    if not isinstance(emb, dict) or (emb.get("model_id"), emb.get("model_hash")) != (outer["model_id"],
                                                                                     outer["model_hash"]):
        raise FleetError(f"the version manifest of {version} names another embedding model than the archive's")
    manuals = inner.get("manuals")
    if not isinstance(manuals, list) or not all(isinstance(m, dict) for m in manuals):
        raise FleetError(f"the version manifest of {version} has no valid list of manuals")
    wanted = {str(m.get("sha256")) for m in manuals}
    shipped = {m.group(1) for m in map(_MANUAL_RE.match, walked.files) if m}
    if wanted - shipped:
        raise FleetError(f"archive of {version} lacks the original PDF of manual(s) "
                         f"{', '.join(sorted(s[:12] for s in wanted - shipped))}")
    if shipped - wanted:
        raise FleetError(f"archive of {version} holds PDFs its version does not cite "
                         f"({', '.join(sorted(s[:12] for s in shipped - wanted))})")


# -- import --------------------------------------------------------------------------------------
def _present(store: IndexStore, walked: _Walked) -> bool:
    """Whether the version is already here: True when identical, FleetError when different."""
    target = store.indexes_dir / walked.version
    if not target.exists():
        return False
    expected = walked.files[f"payload/indexes/{walked.version}/{MANIFEST}"]["sha256"]
    try:
        same = sha256_file(target / MANIFEST) == expected
    except OSError:
        same = False
    if not same:
        raise FleetError(f"version {walked.version} already exists on this gateway with other content; "
                         "an index version is immutable, so it is not replaced")
    return True


def _summary(walked: _Walked, status: str, **extra: Any) -> dict[str, Any]:
    return {"version": walked.version, "status": status, "active": False, "signed_by": walked.signer,
            "created_at": walked.manifest.get("created_at"), "embedding": walked.manifest["embedding"],
            "manuals": len(walked.files) - len(_VERSION_FILES),
            "payload_bytes": sum(int(e["size"]) for e in walked.files.values()), **extra}


def check_archive(store: IndexStore, archive: Path, model_id: str, model_hash: str,
                  max_bytes: int = DEFAULT_MAX_BYTES) -> dict[str, Any]:
    """Everything import checks except the final verification of the extracted version; writes nothing.

    For an OTA tool's pre-install step (`manualqa index import --check`).
    """
    walked = _walk(Path(archive), store.data_dir, max_bytes, (model_id, model_hash))
    return _summary(walked, "already present" if _present(store, walked) else "ok")


def import_archive(store: IndexStore, archive: Path, model_id: str, model_hash: str,
                   max_bytes: int = DEFAULT_MAX_BYTES) -> dict[str, Any]:
    """Land the archive's version as an inactive version of `store`; returns what was done.

    `model_id` / `model_hash` are those of the embedder this gateway runs: vectors of another
    model are meaningless to it. On any failure the data directory is as it was.
    """
    archive = Path(archive)
    model = (model_id, model_hash)
    walked = _walk(archive, store.data_dir, max_bytes, model)  # read-only: a bad file fails here
    if _present(store, walked):
        return _summary(walked, "already present", manuals_added=0)
    try:
        with store._locked():  # IndexStore's one writer lock (it has no public name)
            return _import_locked(store, archive, max_bytes, model)
    except RetrievalError as exc:  # the lock is taken: another ingest or index operation runs
        raise FleetError(f"cannot import {archive.name} now: {exc}") from exc


def _import_locked(store: IndexStore, archive: Path, max_bytes: int, model: tuple[str, str]) -> dict[str, Any]:
    """Extract into a temporary directory of the data directory, verify, rename into place."""
    tmp = Path(tempfile.mkdtemp(prefix=f"{TMP_PREFIX}import-", dir=store.data_dir))
    try:
        walked = _walk(archive, store.data_dir, max_bytes, model, sink=tmp)  # the file may have changed
        problems = verify_version_dir(tmp / "indexes" / walked.version, walked.version)
        if problems:
            raise FleetError(f"version {walked.version} in the archive fails verification: {'; '.join(problems)}")
        if _present(store, walked):
            return _summary(walked, "already present", manuals_added=0)
        return _summary(walked, "imported", manuals_added=_place(store, walked, tmp))
    finally:
        remove_tree(tmp)


def _place(store: IndexStore, walked: _Walked, tmp: Path) -> int:
    """Rename the staged manuals and version into place; undo what was placed if a step fails."""
    made: list[Path] = []
    placed: list[Path] = []
    try:
        for directory in (store.manuals_dir, store.indexes_dir):
            if not directory.is_dir():
                directory.mkdir(parents=True)
                made.append(directory)
        for staged in sorted((tmp / "manuals").glob("*.pdf")):
            target = store.manuals_dir / staged.name
            if not target.is_file():  # content-addressed: an existing file is the same manual
                os.replace(staged, target)
                placed.append(target)
        fsync_dir(store.manuals_dir)
        os.rename(tmp / "indexes" / walked.version, store.indexes_dir / walked.version)
        fsync_dir(store.indexes_dir)
    except BaseException:
        for path in placed:
            path.unlink(missing_ok=True)
        for directory in reversed(made):
            with suppress(OSError):
                directory.rmdir()
        raise
    return len(placed)
