"""The library core under the admin page's new tools (issue 10), without a server: the log export
read in pages, key names and `last_used`, and the doctor run that the CLI and the web share."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from gateway.records import db as gdb
from gateway.records.answer_rows import LogError
from gateway.records.answers import AnswerLog
from gateway.records.keys import KeyExistsError, KeyStore, KeyStoreError
from gateway.records.log_export import export_chunks, export_file_name


def row(i: int, outcome: str = "answered", time: str | None = None) -> dict:
    return {"id": gdb.new_id(), "time": time or gdb.utcnow(), "question": f"question {i}?", "scope": [],
            "answer": f"answer {i}", "outcome": outcome, "mode": "generate", "client": "api",
            "citations": [], "passages": [], "timings": {"total_ms": float(i)}}


@pytest.fixture()
def log(tmp_path: Path):
    lg = AnswerLog(tmp_path / "gateway.db")
    yield lg
    lg.close()


def test_export_in_small_pages_is_the_whole_log_in_order(log: AnswerLog) -> None:
    ids = [log.record(row(i, "not_found" if i % 3 == 0 else "answered"), durable=True) for i in range(7)]
    chunks = list(export_chunks(log, "jsonl", page_rows=2))
    assert [n for _, n in chunks] == [2, 2, 2, 1]  # seven rows, two per page
    lines = [json.loads(x) for text, _ in chunks for x in text.splitlines()]
    assert [x["id"] for x in lines] == ids and lines[4]["timings"] == {"total_ms": 4.0}
    whole = io.StringIO()
    assert log.export("jsonl", whole) == 7  # `manualqa log export` writes the same chunks
    assert whole.getvalue() == "".join(text for text, _ in chunks)
    found = list(export_chunks(log, "csv", outcome="not_found", page_rows=1))
    table = list(csv.DictReader(io.StringIO("".join(text for text, _ in found))))
    assert [r["id"] for r in table] == [ids[0], ids[3], ids[6]] and found[0][1] == 0  # the header first


def test_export_checks_its_filters_before_the_first_chunk(log: AnswerLog) -> None:
    for bad in ({"fmt": "xml"}, {"fmt": "jsonl", "since": "yesterday-ish"}, {"fmt": "csv", "outcome": "great"}):
        with pytest.raises(LogError):
            export_chunks(log, **bad)  # raised by the call itself, not on the first next()
    log.record(row(1, time="2020-01-01T00:00:00.000Z"), durable=True)
    recent = log.record(row(2), durable=True)
    text = "".join(t for t, _ in export_chunks(log, "jsonl", since="1d"))
    assert [json.loads(x)["id"] for x in text.splitlines()] == [recent]
    assert list(export_chunks(log, "jsonl", since="2999-01-01")) == []


def test_export_ends_at_the_rows_that_existed_when_it_started(log: AnswerLog) -> None:
    first = [log.record(row(i), durable=True) for i in range(3)]
    chunks = export_chunks(log, "jsonl", page_rows=1)
    text, _ = next(chunks)
    log.record(row(9), durable=True)  # answered while the download runs
    text += "".join(t for t, _ in chunks)
    assert [json.loads(x)["id"] for x in text.splitlines()] == first


def test_export_file_names_say_what_they_hold() -> None:
    assert export_file_name("csv", "7d", "not_found", "2026-12-01T14:40:38.069Z") == \
        "manualqa-answers-not_found-since-7d-20261201T144038.csv"
    assert export_file_name("jsonl", '2026-11-01"; x', None, "") == "manualqa-answers-since-2026-11-01___x.jsonl"
    assert export_file_name("jsonl", None, "answered,not_found", "") == "manualqa-answers-answered+not_found.jsonl"


def test_key_names_are_safe_in_urls_and_unique_while_active(tmp_path: Path) -> None:
    store = KeyStore(tmp_path / "gateway.db")
    for bad in ("", "a/b", "two words", "x@revoked-2026", "-lead", "a" * 65, "ü", "tablet\n"):
        with pytest.raises(KeyStoreError):
            store.create(bad, "reader")
    store.create("kiosk-3.floor_2", "reader")
    with pytest.raises(KeyExistsError):
        store.create("kiosk-3.floor_2", "admin")
    assert KeyExistsError.http_status == 409
    assert store.revoke("kiosk-3.floor_2") and not store.revoke("kiosk-3.floor_2")
    store.create("kiosk-3.floor_2", "admin")  # free again once revoked; the old row is kept, renamed
    names = [(k["name"].split("@")[0], k["role"], k["revoked"] is None) for k in store.list()]
    assert names == [("kiosk-3.floor_2", "reader", False), ("kiosk-3.floor_2", "admin", True)]


def test_last_used_is_recorded_at_most_once_a_minute(tmp_path: Path) -> None:
    store = KeyStore(tmp_path / "gateway.db")
    key = store.create("tablet", "reader")
    assert store.list()[0]["last_used"] is None
    assert store.verify(key) is not None
    used = store.list()[0]["last_used"]
    assert used is not None and used >= store.list()[0]["created"]
    store.verify(key)
    assert store.list()[0]["last_used"] == used  # within the minute: no write
    with gdb.opened(tmp_path / "gateway.db") as db:
        db.execute("update api_keys set last_used = '2020-01-01T00:00:00.000Z'")
    store.verify(key)
    assert store.list()[0]["last_used"] > "2026"
    assert store.verify("mqa_wrong") is None


def test_doctor_run_is_recorded_where_the_server_reads_it(tmp_path: Path) -> None:
    from gateway.qualification.doctor import run_and_record
    from gateway.records.deployments import last_doctor_report
    from runtimes.profiles import load_profile
    from tests.support.server import SCRIPTED_PROFILE

    path = tmp_path / "profile.toml"
    path.write_text(SCRIPTED_PROFILE.format(script="Six volts [1].", delay=0.0), encoding="utf-8")
    run = run_and_record(tmp_path / "data", load_profile(path))
    assert run.warning is None and [g.gate for g in run.report.gates] == [1, 2, 3, 4]
    saved = last_doctor_report(tmp_path / "data", "scripted-test")
    assert saved is not None and saved["checked_at"] == run.checked_at
    assert saved["report"]["gates"] == run.report.to_dict()["gates"]
    (tmp_path / "ro").write_text("a file where the data directory should be", encoding="utf-8")
    failed = run_and_record(tmp_path / "ro", load_profile(path))
    assert failed.warning and "could not record" in failed.warning
