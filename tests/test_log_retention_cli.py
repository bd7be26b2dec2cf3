"""The answer log's retention from a shell: `manualqa log retention --days N` deletes answers (and their
feedback) older than N days now, through the same library function as PUT /api/v1/answers/retention
(gateway.records.retention.set_retention), and is in the audit trail as the web's `retention.set` is
(AuditLog.record, actor `cli:<os user>`). Without --days it shows the configured setting. Real SQLite,
through click's runner; no index is needed."""

from __future__ import annotations

import getpass
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from gateway.cli import main
from gateway.records import db as gdb
from gateway.records.answers import AnswerLog
from gateway.records.audit import AuditLog


def row(question: str, age_days: float) -> dict[str, Any]:
    return {"id": gdb.new_id(), "time": gdb.iso_utc(datetime.now(timezone.utc) - timedelta(days=age_days)),
            "question": question, "scope": [], "answer": "", "outcome": "not_found", "mode": "extractive",
            "flags": [], "citations": [], "passages": [], "index_version": "v1", "chain_id": None, "profile": "p",
            "generation_config": {}, "timings": {}, "error": None, "client": "web", "key_name": None}


@pytest.fixture()
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    data = tmp_path / "data"
    data.mkdir()
    log = AnswerLog(data / "gateway.db")
    for question, age in (("a year ago", 365), ("40 days ago", 40), ("10 days ago", 10), ("today", 0)):
        r = row(question, age)
        log.record(r)
        log.add_feedback(r["id"], -1, "not helpful")
    log.close()
    (tmp_path / "manualqa.toml").write_text("[log]\nretention_days = 400\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SUDO_USER", raising=False)
    runner = CliRunner()
    env = {"MANUALQA_DATA": str(data), "MANUALQA_CONFIG": str(tmp_path / "manualqa.toml")}

    def invoke(*args: str) -> Result:
        return runner.invoke(main, list(args), env=env, catch_exceptions=False)

    return invoke


def questions(data: Path) -> list[str]:
    log = AnswerLog(data / "gateway.db")
    try:
        return [r["question"] for r in log.query(limit=100)]
    finally:
        log.close()


def test_log_retention_deletes_older_answers_now_and_is_audited(run: Any, tmp_path: Path) -> None:
    data = tmp_path / "data"
    shown = run("log", "retention")
    assert shown.exit_code == 0 and "older than 400 days" in shown.stdout, shown.output

    done = run("log", "retention", "--days", "30", "--json")
    assert done.exit_code == 0, done.output
    change = json.loads(done.stdout)
    assert (change["days"], change["previous_days"], change["deleted"]) == (30, 400, 2)
    assert questions(data) == ["today", "10 days ago"]
    with gdb.opened(data / "gateway.db") as db:  # no feedback left pointing at a deleted answer
        assert db.conn.execute("SELECT count(*) FROM feedback").fetchone()[0] == 2

    kept = run("log", "retention", "--days", "0")
    assert kept.exit_code == 0 and "every answer is kept" in kept.stdout
    assert questions(data) == ["today", "10 days ago"]
    assert run("log", "retention", "--days", "-1").exit_code == 2  # a usage error, nothing deleted

    rows, _ = AuditLog(data / "gateway.db").query(limit=10, action="retention.set")
    assert [(r.action, r.target, r.via, r.result, r.status, r.detail) for r in rows] == [
        ("retention.set", "0", "cli", "ok", 0, "was 400"), ("retention.set", "30", "cli", "ok", 0, "was 400")]
    assert rows[0].actor == f"cli:{getpass.getuser()}"


def test_the_cli_and_the_api_set_it_through_one_function(run: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from gateway.records import retention
    from gateway.web import routes_retention

    assert routes_retention.set_retention is retention.set_retention  # the PUT route's setter
    calls: list[int] = []
    real = retention.set_retention

    def spy(settings: Any, answers: Any, days: int) -> Any:
        calls.append(days)
        return real(settings, answers, days)

    monkeypatch.setattr(retention, "set_retention", spy)
    assert run("log", "retention", "--days", "7").exit_code == 0
    assert calls == [7]
