"""Retention for the answer log (issue 48, item 9): log.retention_days deletes answers, and their feedback,
older than N days, on a real gateway.db written through the records layer; 0 keeps everything; an
export written before stays whole; the setting is read from TOML and MANUALQA_LOG__RETENTION_DAYS, and
a server applies it at start."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from gateway.config import ConfigError, LogSettings, Settings, load_settings
from gateway.records import db as gdb
from gateway.records.answers import AnswerLog
from gateway.records.retention import RetentionTask, prune_answers

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)


def row(question: str, age_days: float) -> dict[str, Any]:
    return {"id": gdb.new_id(), "time": gdb.iso_utc(NOW - timedelta(days=age_days)), "question": question,
            "scope": [], "answer": "", "outcome": "not_found", "mode": "extractive", "flags": [], "citations": [],
            "passages": [], "index_version": "v1", "chain_id": None, "profile": "p", "generation_config": {},
            "timings": {}, "error": None, "client": "web", "key_name": None}


@pytest.fixture()
def log(tmp_path: Path) -> Any:
    lg = AnswerLog(tmp_path / "gateway.db")
    yield lg
    lg.close()


def test_only_answers_older_than_the_setting_go_with_their_feedback(log: AnswerLog, tmp_path: Path) -> None:
    rows = [row("a year ago", 365), row("31 days ago", 31), row("29 days ago", 29), row("today", 0)]
    for r in rows:
        log.record(r)
        log.add_feedback(r["id"], -1, "not helpful")
    export = tmp_path / "before.jsonl"
    with open(export, "w", encoding="utf-8") as fh:
        assert log.export("jsonl", fh) == 4

    assert prune_answers(log.path, 0, now=NOW) == 0  # 0: kept forever
    assert log.count() == 4
    assert prune_answers(log.path, 30, now=NOW) == 2
    assert [r["question"] for r in log.query()] == ["today", "29 days ago"]
    with gdb.opened(log.path) as db:
        left = {r[0] for r in db.conn.execute("SELECT answer_id FROM feedback")}
    assert left == {rows[2]["id"], rows[3]["id"]}  # no feedback left pointing at a deleted answer
    assert [json.loads(line)["question"] for line in export.read_text(encoding="utf-8").splitlines()] == [
        r["question"] for r in rows]  # an export already written is the admin's: untouched
    assert prune_answers(log.path, 30, now=NOW) == 0  # applying it again finds nothing more


def test_many_old_answers_go_in_batches(log: AnswerLog) -> None:
    for i in range(2500):
        log.record(row(f"old {i}", 100))
    log.record(row("new", 1))
    assert log.flush()
    assert prune_answers(log.path, 30, now=NOW) == 2500
    assert [r["question"] for r in log.query()] == ["new"]


def test_the_setting_comes_from_toml_and_the_environment(tmp_path: Path) -> None:
    assert Settings().log.retention_days == 0
    toml = tmp_path / "manualqa.toml"
    toml.write_text("[log]\nretention_days = 90\n", encoding="utf-8")
    assert load_settings(toml, env={}).log.retention_days == 90
    assert load_settings(toml, env={"MANUALQA_LOG__RETENTION_DAYS": "7"}).log.retention_days == 7
    with pytest.raises(ConfigError, match="retention_days"):
        load_settings(None, env={"MANUALQA_LOG__RETENTION_DAYS": "-1"})
    with pytest.raises(ConfigError, match="retention_days"):
        load_settings(None, env={"MANUALQA_LOG__RETENTION_DAYS": "a month"})


def test_the_task_reads_the_setting_each_round(log: AnswerLog) -> None:
    now = datetime.now(timezone.utc)
    log.record({**row("old", 0), "time": gdb.iso_utc(now - timedelta(days=10))})
    log.record({**row("new", 0), "time": gdb.iso_utc(now)})
    days = [0]
    task = RetentionTask(lambda: log, lambda: days[0])
    assert task.run_once() == 0 and log.count() == 2
    days[0] = 7
    assert task.run_once() == 1 and task.last_deleted == 1 and task.last_run
    assert [r["question"] for r in log.query()] == ["new"]


def test_a_server_applies_it_at_start(tmp_path: Path) -> None:
    from litestar.testing import TestClient

    from gateway.web.app import create_app

    settings = Settings(data_dir=tmp_path / "data", log=LogSettings(retention_days=30))
    log = AnswerLog(settings.db_path)
    now = datetime.now(timezone.utc)
    log.record({**row("old", 0), "time": gdb.iso_utc(now - timedelta(days=60))})
    log.record({**row("new", 0), "time": gdb.iso_utc(now)})
    log.close()
    app = create_app(settings, warm=False)
    task = app.state.retention
    with TestClient(app):
        for _ in range(600):  # its first round runs in its thread at start
            if task.last_run:
                break
            task._stop.wait(0.1)
        assert task.last_run and task.last_deleted == 1
    after = AnswerLog(settings.db_path)
    assert [r["question"] for r in after.query()] == ["new"]
    after.close()
