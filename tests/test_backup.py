"""`manualqa backup` / `restore` (issue 12) on a real index of the sample manuals.

A backup taken while the answer log is being written restores onto an empty data directory that
answers identically (same active version, same search hits and scores, an untorn gateway.db); every
kind of damaged or partial backup is refused with the bad file named, and the target is untouched.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gateway.cli import main
from gateway.config import Settings
from gateway.records.active_profile import ActiveProfile
from gateway.records.answers import AnswerLog
from gateway.records.backup import BackupError, create_backup, restore_backup
from gateway.records.db import new_id, utcnow
from gateway.records.deployments import save_doctor_report
from gateway.services import Services
from retrieval.pointer import read_pointer
from tests.support.server import REPO_ROOT, built_index

QUESTIONS = ("SKR Mini E3 power jumper position", "What kind of crimp connectors do I need for the SKR E3 wiring?",
             "How do I calibrate the piston board sensor?")


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Path:
    """A live-looking data directory: index, logged answers, an activated profile, a doctor record."""
    data = built_index(tmp_path_factory.mktemp("backup-src") / "data", embedder)
    gw = Services(Settings(data_dir=data), embedder=embedder)
    for q in QUESTIONS[:2]:
        gw.answer(q, mode="extractive")
    gw.log.close()
    ActiveProfile(data).activate(REPO_ROOT / "profiles" / "x86-cpu.toml")
    save_doctor_report(data, {"profile": {"name": "x86-cpu-smollm2"}, "ok": True})
    from gateway.fleet import signing

    key = signing.create_key(data, "release")  # a fleet signing key, and its public half trusted
    pub = data.parent / "release.pub"
    pub.write_bytes(signing.export_public(data, key["id"]))
    signing.trust(data, pub)
    return data


@pytest.fixture(scope="module")
def good_backup(tmp_path_factory: pytest.TempPathFactory, source: Path) -> Path:
    dest = tmp_path_factory.mktemp("backup-good") / "bk"
    create_backup(source, dest)
    return dest


def _hits(data: Path, embedder: Any) -> list[list[tuple[str, int, float]]]:
    gw = Services(Settings(data_dir=data), embedder=embedder)
    return [[(h.chunk_id, h.page, h.score) for h in gw.search(q)] for q in QUESTIONS]


def _answer_ids(db: Path) -> list[str]:
    con = sqlite3.connect(db)
    try:
        assert con.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        return [r[0] for r in con.execute("SELECT id FROM answers ORDER BY id")]
    finally:
        con.close()


def test_backup_while_writing_restores_an_identical_gateway(source: Path, tmp_path: Path, embedder: Any,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from gateway.records import backup as backup_module

    log = AnswerLog(source / "gateway.db")
    written: list[str] = []
    stop = threading.Event()
    start: list[int] = []
    copy_db = backup_module._backup_db

    def copy_db_while_writing(src: Path, dst: Path) -> int:
        # The answer log is copied once the writer has committed two more rows since the backup
        # began, however the threads are scheduled on a busy box (they raced the copy before).
        deadline = time.monotonic() + 60
        while len(written) < start[0] + 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        return copy_db(src, dst)

    monkeypatch.setattr(backup_module, "_backup_db", copy_db_while_writing)

    def writer() -> None:
        while not stop.is_set():
            row = {"id": new_id(), "time": utcnow(), "question": "load", "outcome": "not_found",
                   "mode": "extractive", "client": "cli"}
            written.append(log.record(row, durable=True))

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        while len(written) < 20:
            stop.wait(0.01)
        before = len(written)
        start.append(before)
        summary = create_backup(source, tmp_path / "bk")
        during = len(written) - before
    finally:
        stop.set()
        thread.join()
        log.close()
    assert during > 0, "the writer was not writing while the backup ran"
    assert not any(p.name.startswith(".tmp-") for p in tmp_path.iterdir())

    restored = restore_backup(tmp_path / "bk", tmp_path / "fresh" / "data")
    target = tmp_path / "fresh" / "data"
    active = read_pointer(source / "ACTIVE")
    assert summary["active_version"] == restored["active_version"] == read_pointer(target / "ACTIVE") == active
    assert restored["moved_aside"] is None and summary["warnings"] == []
    assert _hits(target, embedder) == _hits(source, embedder)
    # no torn database: the restored log is exactly the rows committed up to some instant of the backup
    ids = _answer_ids(target / "gateway.db")
    all_ids = _answer_ids(source / "gateway.db")
    assert len(ids) == summary["answers"] and len(ids) >= before + 2
    assert ids == all_ids[: len(ids)]
    assert read_pointer(target / "profiles" / "ACTIVE") == summary["active_profile"]
    assert ActiveProfile(target).current().name == "x86-cpu-smollm2"
    assert (target / "doctor" / "x86-cpu-smollm2.json").is_file()
    assert sorted(p.name for p in (target / "manuals").iterdir()) == sorted(
        p.name for p in (source / "manuals").iterdir())
    assert not (target / "backup.json").exists() and not (target / ".lock").exists()


def test_signing_keys_come_back_private(good_backup: Path, source: Path, tmp_path: Path) -> None:
    """Losing the fleet signing key with a machine would strand every gateway that trusts it."""
    import stat

    from gateway.fleet import signing

    target = tmp_path / "restored"
    restore_backup(good_backup, target)
    assert signing.list_keys(target) == signing.list_keys(source) != []
    private = [p for p in (target / "signing").iterdir() if p.suffix == ".key"]
    assert private and all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in private)
    assert stat.S_IMODE((target / "signing").stat().st_mode) == 0o700
    assert signing.private_key(target)[0] == signing.private_key(source)[0]


def test_backup_refuses_a_used_destination_and_never_leaves_a_half_backup(
        source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "x").write_text("x")
    with pytest.raises(BackupError, match="exists and is not empty"):
        create_backup(source, tmp_path / "used")

    def boom(src: Path, dst: Path) -> int:
        raise OSError("disk full")

    monkeypatch.setattr("gateway.records.backup._backup_db", boom)
    with pytest.raises(OSError, match="disk full"):
        create_backup(source, tmp_path / "bk")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["used"]


def test_backup_skips_a_damaged_old_version_and_refuses_a_damaged_active_one(source: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(source, data)
    active = read_pointer(data / "ACTIVE")
    shutil.copytree(data / "indexes" / active, data / "indexes" / "v20000101T000000-abcdef")  # id mismatch
    (data / "indexes" / ".tmp-v20000101T000001-abcdef").mkdir()  # an ingest's build folder
    summary = create_backup(data, tmp_path / "bk")
    assert summary["versions"] == [active]
    assert summary["warnings"] == ["skipped index version v20000101T000000-abcdef: manifest.json: id "
                                   f"{active!r} does not match directory 'v20000101T000000-abcdef'"]
    assert sorted(p.name for p in (tmp_path / "bk" / "indexes").iterdir()) == [active]
    restore_backup(tmp_path / "bk", tmp_path / "restored")  # and it restores

    vectors = data / "indexes" / active / "vectors.faiss"
    vectors.write_bytes(vectors.read_bytes()[:-64])
    with pytest.raises(BackupError, match=f"the active index version {active} fails verification: "
                                          "vectors.faiss: sha256 does not match"):
        create_backup(data, tmp_path / "bk2")
    assert not (tmp_path / "bk2").exists() and not any(p.name.startswith(".tmp-") for p in tmp_path.iterdir())


def _relist(bk: Path, rel: str) -> None:
    """Make backup.json agree with rel's damaged bytes (damage that happened before it was written)."""
    import hashlib

    manifest = json.loads((bk / "backup.json").read_text())
    data = (bk / rel).read_bytes()
    manifest["files"][rel] = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
    (bk / "backup.json").write_text(json.dumps(manifest))


def _list(bk: Path, rel: str) -> None:
    manifest = json.loads((bk / "backup.json").read_text())
    manifest["files"][rel] = {"sha256": "0" * 64, "bytes": 1}
    (bk / "backup.json").write_text(json.dumps(manifest))


def _version(bk: Path) -> Path:
    return next((bk / "indexes").iterdir())


def _no_manifest(bk: Path) -> None:
    (bk / "backup.json").unlink()


def _truncated(bk: Path) -> None:
    p = _version(bk) / "chunks.db"
    p.write_bytes(p.read_bytes()[:-4096])


def _flipped(bk: Path) -> None:
    p = _version(bk) / "vectors.faiss"
    data = bytearray(p.read_bytes())
    data[len(data) // 2] ^= 0x01
    p.write_bytes(bytes(data))


def _missing(bk: Path) -> None:
    (_version(bk) / "chunks.db").unlink()


def _corrupt_db(bk: Path) -> None:
    p = bk / "gateway.db"
    data = bytearray(p.read_bytes())
    data[4096 + 8: 4096 + 4000] = b"\xa5" * 3992  # page 2's b-tree header and cells
    p.write_bytes(bytes(data))
    _relist(bk, "gateway.db")


def _not_a_db(bk: Path) -> None:
    (bk / "gateway.db").write_bytes(b"x" * 4096)
    _relist(bk, "gateway.db")


def _edited_version(bk: Path) -> None:
    p = _version(bk) / "manifest.json"
    m = json.loads(p.read_text())
    m["chunk_count"] += 1
    p.write_text(json.dumps(m))
    _relist(bk, f"indexes/{p.parent.name}/manifest.json")


def _active_elsewhere(bk: Path) -> None:
    (bk / "ACTIVE").write_text("v20000101T000000-abcdef\n")
    _relist(bk, "ACTIVE")


def _extra(bk: Path) -> None:
    (_version(bk) / "notes.txt").write_text("added later")


BAD: dict[str, tuple[Callable[[Path], None], str]] = {
    "no backup.json": (_no_manifest, "not a complete backup: it has no backup.json"),
    "truncated": (_truncated, r"backup is damaged: indexes/v[^ ]+/chunks\.db has \d+ bytes, backup\.json says \d+"),
    "flipped byte": (_flipped, r"indexes/v[^ ]+/vectors\.faiss does not match its sha256"),
    "missing file": (_missing, r"backup is partial: indexes/v[^ ]+/chunks\.db is missing"),
    "corrupt gateway.db": (_corrupt_db, "gateway.db in the backup integrity_check: .*database disk image is malformed"),
    "not a database": (_not_a_db, "gateway.db in the backup cannot be read by SQLite: file is not a database"),
    "edited version": (_edited_version, r"index version v[^ ]+ in the backup fails verification: manifest\.json: "
                                        "digest mismatch"),
    "active not backed up": (_active_elsewhere, "ACTIVE in the backup names 'v20000101T000000-abcdef'"),
    "unlisted file": (_extra, r"indexes/v[^ ]+/notes\.txt is in the backup but not listed in backup\.json"),
    "dot-dot path": (lambda bk: _list(bk, "indexes/../../outside.txt"), r"unsafe path 'indexes/\.\./\.\./outside"),
    "absolute path": (lambda bk: _list(bk, "/etc/passwd"), "unsafe path '/etc/passwd'"),
    "unknown path": (lambda bk: _list(bk, "profiles/sub/x.toml"), "'profiles/sub/x.toml', which is not a file"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_backup_is_refused_and_the_target_untouched(case: str, good_backup: Path, tmp_path: Path) -> None:
    damage, message = BAD[case]
    bk = tmp_path / "bk"
    shutil.copytree(good_backup, bk)
    damage(bk)
    target = tmp_path / "data"
    target.mkdir()
    (target / "keep.txt").write_text("old data")
    with pytest.raises(BackupError, match=message):
        restore_backup(bk, target, force=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bk", "data"]
    assert [p.name for p in target.iterdir()] == ["keep.txt"] and (target / "keep.txt").read_text() == "old data"


def test_restore_over_existing_data_needs_force_and_keeps_the_old(good_backup: Path, tmp_path: Path) -> None:
    target = tmp_path / "data"
    target.mkdir()
    (target / "gateway.db").write_text("the old one")
    with pytest.raises(BackupError, match="is not empty; restore into an empty one, or use --force"):
        restore_backup(good_backup, target)
    assert [p.name for p in target.iterdir()] == ["gateway.db"]
    summary = restore_backup(good_backup, target, force=True)
    aside = Path(summary["moved_aside"])
    assert aside.parent == tmp_path and aside.name.startswith("data.before-restore-")
    assert (aside / "gateway.db").read_text() == "the old one"
    assert read_pointer(target / "ACTIVE") == summary["active_version"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["data", aside.name])
    (tmp_path / "empty").mkdir()  # an empty directory is a fine target without --force
    assert restore_backup(good_backup, tmp_path / "empty")["moved_aside"] is None


def test_cli_backup_and_restore(source: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    config = tmp_path / "manualqa.toml"
    config.write_text("")

    def run(data: Path, *args: str) -> Any:
        return runner.invoke(main, list(args), env={"MANUALQA_DATA": str(data), "MANUALQA_CONFIG": str(config)})

    bk = tmp_path / "bk"
    done = run(source, "backup", str(bk), "--json")
    assert done.exit_code == 0, done.output
    summary = json.loads(done.output)
    assert summary["active_version"] == read_pointer(source / "ACTIVE") and summary["files"] > 5

    done = run(source, "backup", str(bk))
    assert done.exit_code == 1 and "Error: " in done.output and "exists and is not empty" in done.output
    done = run(source, "backup", str(tmp_path / "bk2"))
    assert done.exit_code == 0, done.output
    assert f"backed up to {tmp_path / 'bk2'}: {summary['files']} files" in done.output
    assert f"active index version: {summary['active_version']}" in done.output

    target = tmp_path / "new" / "data"
    done = run(target, "restore", str(bk), "--json")
    assert done.exit_code == 0, done.output
    restored = json.loads(done.output)
    assert restored["active_version"] == summary["active_version"] and restored["data_dir"] == str(target)

    done = run(target, "restore", str(bk))
    assert done.exit_code == 1 and "is not empty" in done.output
    done = run(target, "restore", str(bk), "--force")
    assert done.exit_code == 0, done.output
    assert f"active index version: {summary['active_version']}" in done.output
    assert "the previous data directory was kept as" in done.output

    (bk / "backup.json").unlink()
    done = run(tmp_path / "other", "restore", str(bk))
    assert done.exit_code == 1 and "it has no backup.json" in done.output
    assert not (tmp_path / "other").exists()
