"""The CLI's admin actions in the audit trail (issue 48, item 9): `manualqa keys`, `remove`, `index activate /
rollback / gc` write the row the web's middleware writes for the same action (AuditLog.record), with the
actor `cli:<os user>`, refused or failed ones too; `manualqa audit` and GET /api/v1/audit read them back.
Through click's runner on a copy of the sample index, real SQLite."""

from __future__ import annotations

import getpass
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from gateway.cli import main
from gateway.records.audit import AuditLog


@pytest.fixture()
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedder: Any, sample_data_dir: Path) -> Any:
    import retrieval.embedders

    shutil.copytree(sample_data_dir, tmp_path / "data", ignore=shutil.ignore_patterns("gateway.db*"))
    monkeypatch.setattr(retrieval.embedders, "load_embedder", lambda *a, **k: embedder)
    monkeypatch.chdir(tmp_path)  # no stray manualqa.toml
    monkeypatch.delenv("SUDO_USER", raising=False)
    runner = CliRunner()
    env = {"MANUALQA_DATA": str(tmp_path / "data"), "MANUALQA_CONFIG": ""}

    def invoke(*args: str) -> Result:
        return runner.invoke(main, list(args), env=env, catch_exceptions=False)

    return invoke


def ok(result: Result) -> Result:
    assert result.exit_code == 0, result.output + result.stderr
    return result


def test_cli_admin_actions_are_in_the_audit_trail(run: Any, tmp_path: Path) -> None:
    shown = json.loads(ok(run("index", "show", "--json")).stdout)
    v0, manual = shown["id"], shown["manuals"][0]["file_name"]
    key = ok(run("keys", "create", "alice", "--role", "admin")).stdout.strip()
    ok(run("keys", "revoke", "alice"))
    assert run("keys", "revoke", "nobody").exit_code == 1
    v1 = json.loads(ok(run("remove", manual, "--json")).stdout)["version"]
    ok(run("index", "rollback"))
    ok(run("index", "activate", v1))
    missing = run("index", "activate", "no-such-version")
    assert missing.exit_code == 1 and "no-such-version" in missing.stderr
    ok(run("index", "gc", "--keep", "1", "--dry-run"))  # a preview: not an action
    ok(run("index", "gc", "--keep", "1"))
    ok(run("keys", "list"))  # a read: not an action

    page = json.loads(ok(run("audit", "--json", "--limit", "50")).stdout)
    rows = [(e["action"], e["target"], e["result"], e["status"]) for e in page["entries"]]
    assert rows == [
        ("index.gc", "keep 1", "ok", 0),
        ("index.activate", "no-such-version", "failed", 1),
        ("index.activate", v1, "ok", 0),
        ("index.rollback", v0, "ok", 0),
        ("manual.delete", manual, "ok", 0),
        ("key.revoke", "nobody", "failed", 1),
        ("key.revoke", "alice", "ok", 0),
        ("key.create", "alice", "ok", 0),
    ], rows
    assert page["total"] == len(rows)
    by_action = {(e["action"], e["result"]): e for e in page["entries"]}
    assert by_action[("index.gc", "ok")]["detail"] == "removed nothing"  # the active one and its parent stay
    assert by_action[("index.rollback", "ok")]["detail"] == f"from {v1}"
    assert by_action[("manual.delete", "ok")]["detail"] == f"new version {v1}"
    assert by_action[("key.create", "ok")]["detail"] == "admin"
    assert "no active key named 'nobody'" in by_action[("key.revoke", "failed")]["detail"]
    assert "no-such-version" in by_action[("index.activate", "failed")]["detail"]
    assert {(e["actor"], e["via"]) for e in page["entries"]} == {(f"cli:{getpass.getuser()}", "cli")}
    assert key.startswith("mqa_") and key not in json.dumps(page)  # the key itself is never recorded

    # the API's reader (GET /api/v1/audit lists AuditLog.query) sees the same rows, filters included
    entries, total = AuditLog(tmp_path / "data" / "gateway.db").query(limit=50)
    assert total == len(rows) and [e.id for e in entries] == [e["id"] for e in page["entries"]]
    failed, n = AuditLog(tmp_path / "data" / "gateway.db").query(result="failed")
    assert n == 2 and {e.action for e in failed} == {"index.activate", "key.revoke"}

    text = ok(run("audit", "--action", "key.revoke", "--result", "failed")).stdout
    assert text.count("\n") == 1 and f"cli:{getpass.getuser()} (cli)  key.revoke  nobody  failed 1" in text
    assert "no admin actions recorded matching" in ok(run("audit", "--action", "login")).stdout


def test_the_actor_names_who_ran_sudo(run: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SUDO_USER", "alice-the-admin")
    ok(run("keys", "create", "kiosk"))
    entry = AuditLog(tmp_path / "data" / "gateway.db").query(action="key.create")[0][0]
    assert entry.actor == f"cli:{getpass.getuser()} (sudo from alice-the-admin)" and entry.detail == "reader"


def test_an_ingest_that_reads_nothing_is_a_failed_action(run: Any, tmp_path: Path) -> None:
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"%PDF-1.4\nthis is no PDF at all\n")
    assert run("ingest", str(broken)).exit_code == 1
    entry = AuditLog(tmp_path / "data" / "gateway.db").query(action="manual.ingest")[0][0]
    assert (entry.target, entry.result, entry.status) == (str(broken), "failed", 1)
    assert entry.detail == f"no change; failed: {broken}", entry.detail
