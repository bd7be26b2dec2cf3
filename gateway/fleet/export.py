"""Export: one index version and the originals it cites, as one signed archive file (see
gateway.fleet.archive for the layout and why)."""

from __future__ import annotations

import hashlib
import os
import tarfile
import time
from io import BytesIO
from pathlib import Path
from typing import IO, Any

from gateway.fleet import FleetError
from gateway.fleet.format import (
    FORMAT,
    FORMAT_VERSION,
    MANIFEST_NAME,
    MANUAL_RE,
    SIGNATURE_NAME,
    VERSION_FILES,
    manifest_json,
)
from gateway.fleet.signing import private_key
from gateway.stamps import utcnow
from ingest.discover import sha256_file
from retrieval.manifest import read_manifest, tool_version
from retrieval.pointer import TMP_PREFIX, fsync_dir
from retrieval.types import RetrievalError
from retrieval.versions import IndexStore


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

    sources: list[tuple[str, Path]] = [(f"payload/indexes/{version}/{n}", version_dir / n) for n in VERSION_FILES]
    for man in inner.get("manuals") or []:
        try:
            pdf = store.manual_pdf(str(man.get("sha256")))
        except RetrievalError as exc:
            raise FleetError(f"cannot export {version}: {exc}") from exc
        sources.append((f"payload/manuals/{pdf.name}", pdf))
    files = []
    for name, path in sources:
        digest = sha256_file(path)
        manual = MANUAL_RE.match(name)
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
    body = manifest_json(manifest)
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
            "key_id": signer, "manuals": len(sources) - len(VERSION_FILES),
            "payload_bytes": sum(f["size"] for f in files), "compressed": compress,
            "embedding": manifest["embedding"]}


