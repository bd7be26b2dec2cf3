"""Backup and restore of a whole data directory, safe to take while the server answers.

Why this shape: the index versions and stored originals are immutable files, but gateway.db is
written all the time (the answer log, in WAL mode), so a plain file copy can tear it. A backup
copies gateway.db with SQLite's online backup API (one consistent snapshot), copies the index
versions and pointers under the same locks that ingest and profile switches take, verifies every
copied version, and writes ``backup.json`` (a sha256 and size per file) last, inside a temporary
sibling that is renamed into place: a half-written backup never looks complete.

A restore trusts nothing: every path in backup.json must be one a backup writes, every file must
match its size and sha256, no other file may be present (an unlisted file means the backup was
changed after it was taken, so it is refused rather than ignored), every index version must pass
`retrieval.manifest.verify_version_dir` and gateway.db `PRAGMA integrity_check` — all before the
target is touched. The copy is built beside the target and renamed into place; an existing data
directory is only ever moved aside (``--force``), never deleted.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import secrets
import shutil
import sqlite3
import stat
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import Any

from gateway import __version__
from gateway.errors import GatewayError
from gateway.records.db import MIGRATIONS, utcnow
from retrieval.manifest import CHUNKS_DB, MANIFEST, VECTORS, read_manifest, verify_version_dir
from retrieval.pointer import TMP_PREFIX, atomic_write_bytes, fsync_dir, read_pointer

FORMAT = 1
BACKUP_JSON = "backup.json"
INDEX_LOCK = ".lock"  # retrieval.versions.IndexStore's lock: ingest, activate, rollback and gc hold it
_VERSION = r"v\d{8}T\d{6}-[0-9a-f]{6}"
_VERSION_RE = re.compile(rf"^{_VERSION}$")
_SHA_RE = re.compile(r"^[0-9a-f]{64}$")
_NAME = r"[^/\\.\x00-\x1f][^/\\\x00-\x1f]*"  # one plain file name: no separator, not hidden
_NAME_RE = re.compile(rf"^{_NAME}$")
_ALLOWED = re.compile(rf"^(gateway\.db|gateway\.db\.unwritten\.jsonl|ACTIVE|manuals/[0-9a-f]{{64}}\.pdf"
                      rf"|indexes/{_VERSION}/({re.escape(MANIFEST)}|{re.escape(CHUNKS_DB)}|{re.escape(VECTORS)})"
                      rf"|(profiles|doctor|signing|signing/trusted)/{_NAME})$")


class BackupError(GatewayError):
    """A backup that cannot be taken, or a backup that must not be restored (named file, reason)."""

    http_status = 400
    code = "backup_error"


@contextmanager
def _flock(path: Path, timeout_s: float, holder: str) -> Iterator[None]:
    """Hold an exclusive flock on `path` (the same lock the writers take), waiting up to timeout_s."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise BackupError(f"{holder} is running on {path.parent}; try again when it has "
                                      "finished") from None
                time.sleep(0.1)
        yield
    finally:
        os.close(fd)


def _copy(src: Path, dst: Path) -> tuple[str, int]:
    """Copy src to dst (fsynced, with src's permission bits from the first byte: private signing keys
    stay 0600); the sha256 and size of the bytes actually copied."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    mode = stat.S_IMODE(os.stat(src).st_mode)
    digest, size = hashlib.sha256(), 0
    with open(src, "rb") as fin, open(dst, "xb", opener=lambda p, f: os.open(p, f, mode)) as fout:
        while block := fin.read(1 << 20):
            digest.update(block)
            size += len(block)
            fout.write(block)
        fout.flush()
        os.fsync(fout.fileno())
    return digest.hexdigest(), size


def _private_dirs(root: Path) -> None:
    """The signing key folders are the owner's alone, as gateway.fleet.signing makes them."""
    for sub in ("signing", "signing/trusted"):
        if (root / sub).is_dir():
            os.chmod(root / sub, 0o700)


def _hash(path: Path) -> tuple[str, int]:
    digest, size = hashlib.sha256(), 0
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            digest.update(block)
            size += len(block)
    return digest.hexdigest(), size


def _db_problem(path: Path) -> str | None:
    """Why this gateway.db must not be restored, or None (opened immutable: nothing is written)."""
    try:
        con = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
        try:
            result = [r[0] for r in con.execute("PRAGMA integrity_check").fetchall()]
            if result != ["ok"]:
                return "integrity_check: " + "; ".join(result[:5]).replace("\n", "; ")
            names = [r[0] for r in con.execute("SELECT name FROM _migrations ORDER BY version")]
        finally:
            con.close()
    except sqlite3.Error as exc:
        return f"cannot be read by SQLite: {exc}"
    if names != [name for name, _ in MIGRATIONS][: len(names)]:
        return "its migrations differ from this manualqa's: it belongs to a different manualqa version"
    return None


def create_backup(data_dir: str | Path, dest: str | Path, lock_timeout_s: float = 30.0) -> dict[str, Any]:
    """Copy data_dir into the new directory dest, consistently while the server runs; a summary."""
    data_dir, dest = Path(data_dir), Path(dest)
    if not data_dir.is_dir():
        raise BackupError(f"data directory {data_dir} does not exist")
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise BackupError(f"{dest} exists and is not empty; back up into a new directory")
    if dest.resolve().is_relative_to(data_dir.resolve()):
        raise BackupError(f"{dest} is inside the data directory {data_dir}; back up somewhere else")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f"{TMP_PREFIX}{dest.name}.{os.getpid()}.{secrets.token_hex(3)}")
    tmp.mkdir()
    files: dict[str, dict[str, Any]] = {}
    warnings: list[str] = []

    def take(rel: str) -> str:
        sha, size = _copy(data_dir / rel, tmp / rel)
        files[rel] = {"sha256": sha, "bytes": size}
        return sha

    def drop(prefix: str) -> None:
        for rel in [r for r in files if r.startswith(prefix)]:
            (tmp / rel).unlink()
            del files[rel]

    try:
        # Held while copying only: versions are immutable, but gc may delete one and ingest moves ACTIVE.
        with _flock(data_dir / INDEX_LOCK, lock_timeout_s, "an ingest or index operation"):
            active, copied = _take_indexes(data_dir, take, drop, warnings)
        versions = []
        for version in copied:  # verified on the copy: what is in the backup is what passed
            problems = verify_version_dir(tmp / "indexes" / version, version)
            if not problems:
                versions.append(version)
            elif version == active:
                raise BackupError(f"the active index version {active} fails verification: "
                                  + "; ".join(problems) + " (see `manualqa index verify`)")
            else:
                warnings.append(f"skipped index version {version}: " + "; ".join(problems))
                drop(f"indexes/{version}/")
                (tmp / "indexes" / version).rmdir()
        wanted = {f"manuals/{sha}.pdf" for v in versions for sha in _manual_shas(tmp / "indexes" / v)}
        for rel in [r for r in files if r.startswith("manuals/") and r not in wanted]:
            drop(rel)
        profiles = data_dir / "profiles"
        if profiles.is_dir():
            with _flock(profiles / ".lock", lock_timeout_s, "a profile switch"):
                for path in sorted(profiles.iterdir()):
                    if _NAME_RE.match(path.name) and path.is_file() and not path.is_symlink():
                        take(f"profiles/{path.name}")
        active_profile = read_pointer(tmp / "profiles" / "ACTIVE") if "profiles/ACTIVE" in files else None
        doctor = data_dir / "doctor"
        for path in sorted(doctor.iterdir()) if doctor.is_dir() else []:
            if _NAME_RE.match(path.name) and path.is_file() and not path.is_symlink():
                take(f"doctor/{path.name}")
        for sub in ("signing", "signing/trusted"):  # fleet keys (gateway.fleet.signing)
            folder = data_dir / sub
            for path in sorted(folder.iterdir()) if folder.is_dir() else []:
                if _NAME_RE.match(path.name) and path.is_file() and not path.is_symlink():
                    take(f"{sub}/{path.name}")
        _private_dirs(tmp)
        answers = None
        if (data_dir / "gateway.db").is_file():
            answers = _backup_db(data_dir / "gateway.db", tmp / "gateway.db")
            sha, size = _hash(tmp / "gateway.db")
            files["gateway.db"] = {"sha256": sha, "bytes": size}
        if (data_dir / "gateway.db.unwritten.jsonl").is_file():
            take("gateway.db.unwritten.jsonl")
        for directory in {(tmp / rel).parent for rel in files}:
            fsync_dir(directory)
        manifest = {"format": FORMAT, "kind": "manualqa-backup", "manualqa_version": __version__,
                    "created_at": utcnow(), "source": str(data_dir.resolve()), "active_index_version": active,
                    "active_profile_file": active_profile, "index_versions": versions, "answers": answers,
                    "warnings": warnings, "files": dict(sorted(files.items()))}
        atomic_write_bytes(tmp / BACKUP_JSON, json.dumps(manifest, indent=2).encode("utf-8"))  # last
        if dest.exists():
            dest.rmdir()  # an empty directory the operator made for it
        os.rename(tmp, dest)
        fsync_dir(dest.parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return {"dest": str(dest), **_summary(manifest)}


def _manual_shas(version_dir: Path) -> set[str]:
    """The originals a version names (only well-formed digests: a manifest never names a path)."""
    try:
        manuals = read_manifest(version_dir).get("manuals") or []
    except (OSError, ValueError):
        return set()  # verification reports the unreadable manifest
    return {m["sha256"] for m in manuals if isinstance(m, dict) and _SHA_RE.match(str(m.get("sha256")))}


def _take_indexes(data_dir: Path, take: Callable[[str], str], drop: Callable[[str], None],
                  warnings: list[str]) -> tuple[str | None, list[str]]:
    """Under the index lock: ACTIVE, every complete version directory and the originals they name."""
    active = read_pointer(data_dir / "ACTIVE")
    copied, shas = [], set()
    indexes = data_dir / "indexes"
    for vdir in sorted(indexes.iterdir()) if indexes.is_dir() else []:
        if not _VERSION_RE.match(vdir.name) or not vdir.is_dir():
            continue  # build temporaries (.tmp-*) and strangers are not index versions
        names = [f"indexes/{vdir.name}/{n}" for n in (MANIFEST, CHUNKS_DB, VECTORS)]
        missing = [n for n in names if not (data_dir / n).is_file()]
        if missing and vdir.name == active:
            raise BackupError(f"the active index version {active} is incomplete: {missing[0]} is missing")
        if missing:
            warnings.append(f"skipped index version {vdir.name}: {', '.join(missing)} missing")
            continue
        for rel in names:
            take(rel)
        copied.append(vdir.name)
        shas |= _manual_shas(vdir)
    if active is not None:
        if active not in copied:
            raise BackupError(f"ACTIVE names index version {active!r}, which is not in {indexes}")
        take("ACTIVE")
    for sha in sorted(shas):
        rel = f"manuals/{sha}.pdf"
        if not (data_dir / rel).is_file():
            warnings.append(f"original {rel} is not stored; the index works without it")
        elif take(rel) != sha:  # damaged on this gateway: leave it out, say so
            warnings.append(f"original {rel} does not match its sha256 name; left out")
            drop(rel)
    return active, copied


def _backup_db(src: Path, dst: Path) -> int:
    """SQLite's online backup (one read transaction: a consistent snapshot while others write)."""
    source = sqlite3.connect(str(src), timeout=30.0)
    target = sqlite3.connect(str(dst))
    try:
        source.execute("PRAGMA busy_timeout = 30000")
        source.backup(target)  # pages=-1: the whole database in one step
        target.execute("PRAGMA journal_mode = DELETE")  # one self-contained file, no -wal beside it
        result = [r[0] for r in target.execute("PRAGMA integrity_check").fetchall()]
        if result != ["ok"]:
            raise BackupError(f"the copy of {src} fails integrity_check: " + "; ".join(result[:5]).replace("\n", "; "))
        try:
            return int(target.execute("SELECT count(*) FROM answers").fetchone()[0])
        except sqlite3.OperationalError:  # a database without the answer log yet
            return 0
    finally:
        target.close()
        source.close()


def _summary(manifest: dict[str, Any]) -> dict[str, Any]:
    files = manifest["files"]
    return {"created_at": manifest.get("created_at"), "files": len(files),
            "bytes": sum(int(f["bytes"]) for f in files.values()),
            "versions": manifest.get("index_versions", []), "active_version": manifest.get("active_index_version"),
            "active_profile": manifest.get("active_profile_file"), "answers": manifest.get("answers"),
            "warnings": manifest.get("warnings", [])}


def verify_backup(src: str | Path) -> dict[str, Any]:
    """backup.json of src, once every check a restore needs has passed; raises BackupError otherwise."""
    src = Path(src)
    try:
        manifest = json.loads((src / BACKUP_JSON).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BackupError(f"{src} is not a complete backup: it has no {BACKUP_JSON}") from None
    except (OSError, ValueError) as exc:
        raise BackupError(f"{src / BACKUP_JSON} cannot be read: {exc}") from exc
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(files, dict) or manifest.get("kind") != "manualqa-backup":
        raise BackupError(f"{src / BACKUP_JSON} is not a manualqa backup manifest")
    if manifest.get("format") != FORMAT:
        raise BackupError(f"{src / BACKUP_JSON}: backup format {manifest.get('format')!r}, this manualqa "
                          f"reads format {FORMAT}")
    for rel, entry in files.items():
        parts = PurePosixPath(rel).parts
        if rel.startswith(("/", "\\")) or ".." in parts or "\\" in rel or re.match(r"^[A-Za-z]:", rel):
            raise BackupError(f"{BACKUP_JSON} lists an unsafe path {rel!r} (absolute or with ..): refused")
        if not _ALLOWED.match(rel) or not isinstance(entry, dict):
            raise BackupError(f"{BACKUP_JSON} lists {rel!r}, which is not a file a backup holds: refused")
        path = src / rel
        if path.is_symlink() or not path.is_file():
            raise BackupError(f"backup is partial: {rel} is missing")
        sha, size = _hash(path)
        if size != entry.get("bytes"):
            raise BackupError(f"backup is damaged: {rel} has {size} bytes, {BACKUP_JSON} says {entry.get('bytes')}")
        if sha != entry.get("sha256"):
            raise BackupError(f"backup is damaged: {rel} does not match its sha256 in {BACKUP_JSON}")
    for root, _dirs, names in os.walk(src):
        for name in names:
            rel = Path(root, name).relative_to(src).as_posix()
            if rel != BACKUP_JSON and rel not in files:
                raise BackupError(f"{rel} is in the backup but not listed in {BACKUP_JSON} (changed after it "
                                  "was taken?): refused; remove it if you know why it is there")
    versions = sorted({rel.split("/")[1] for rel in files if rel.startswith("indexes/")})
    if sorted(manifest.get("index_versions") or []) != versions:
        raise BackupError(f"{BACKUP_JSON} names index versions {manifest.get('index_versions')}, its files hold "
                          f"{versions}: refused")
    for version in versions:
        for name in (MANIFEST, CHUNKS_DB, VECTORS):
            if f"indexes/{version}/{name}" not in files:
                raise BackupError(f"backup is partial: indexes/{version}/{name} is not listed")
        problems = verify_version_dir(src / "indexes" / version, version)
        if problems:
            raise BackupError(f"index version {version} in the backup fails verification: " + "; ".join(problems))
    active = read_pointer(src / "ACTIVE") if "ACTIVE" in files else None
    if active != manifest.get("active_index_version") or (active is not None and active not in versions):
        raise BackupError(f"ACTIVE in the backup names {active!r}, which is not a backed-up index version "
                          f"({BACKUP_JSON} says {manifest.get('active_index_version')!r})")
    profile = read_pointer(src / "profiles" / "ACTIVE") if "profiles/ACTIVE" in files else None
    if profile is not None and f"profiles/{profile}" not in files:
        raise BackupError(f"profiles/ACTIVE names {profile!r}, which is not in the backup")
    if "gateway.db" in files and (problem := _db_problem(src / "gateway.db")):
        raise BackupError(f"gateway.db in the backup {problem}")
    return manifest


def restore_backup(src: str | Path, data_dir: str | Path, force: bool = False) -> dict[str, Any]:
    """Verify the backup src completely, then put it in place as data_dir; a summary."""
    src, data_dir = Path(src), Path(data_dir)
    manifest = verify_backup(src)
    if data_dir.resolve() == src.resolve():
        raise BackupError(f"{data_dir} is the backup itself")
    if data_dir.exists() and not data_dir.is_dir():
        raise BackupError(f"{data_dir} exists and is not a directory")
    occupied = data_dir.is_dir() and any(data_dir.iterdir())
    if occupied and not force:
        raise BackupError(f"data directory {data_dir} is not empty; restore into an empty one, or use --force "
                          "to move it aside (it is kept, never deleted)")
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = data_dir.with_name(f"{TMP_PREFIX}restore-{data_dir.name}.{os.getpid()}.{secrets.token_hex(3)}")
    tmp.mkdir()
    aside = None
    try:
        for rel, entry in manifest["files"].items():
            if _copy(src / rel, tmp / rel)[0] != entry["sha256"]:
                raise BackupError(f"{rel} changed while it was being restored")
        _private_dirs(tmp)
        for directory in {(tmp / rel).parent for rel in manifest["files"]} | {tmp}:
            fsync_dir(directory)
        if occupied:
            with _flock(data_dir / INDEX_LOCK, 5.0, "an ingest or index operation"):
                stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
                aside = data_dir.with_name(f"{data_dir.name}.before-restore-{stamp}")
                n = 1
                while aside.exists():
                    n += 1
                    aside = data_dir.with_name(f"{data_dir.name}.before-restore-{stamp}-{n}")
                os.rename(data_dir, aside)
        elif data_dir.exists():
            data_dir.rmdir()
        try:
            os.rename(tmp, data_dir)
        except OSError:
            if aside is not None:
                os.rename(aside, data_dir)  # put the old one back: a failed restore changes nothing
                aside = None
            raise
        fsync_dir(data_dir.parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return {"data_dir": str(data_dir), "source": str(src), "moved_aside": str(aside) if aside else None,
            "restored_at": utcnow(), **_summary(manifest)}
