"""The answer log on a real SQLite file: migrations, WAL, rows, filters, export, feedback, and no row
lost under concurrency or while the database is locked."""

from __future__ import annotations

import csv
import io
import json
import re
import sqlite3
import threading
from pathlib import Path

import pytest

from gateway.records import db as gdb
from gateway.records.answer_rows import OUTCOMES, LogError, parse_since
from gateway.records.answers import AnswerLog


def make_row(i: int, outcome: str = "answered", client: str = "cli", chain_id: str | None = "chainA") -> dict:
    return {
        "id": gdb.new_id(), "time": gdb.utcnow(), "question": f"question {i}?", "scope": ["m.pdf"],
        "answer": f"answer {i} [1]", "outcome": outcome, "mode": "generate", "flags": [],
        "citations": [{"n": 1, "manual": "m.pdf", "page": i % 7 + 1, "passage": "text"}],
        "passages": [{"chunk_id": f"c{i}", "manual": "m.pdf", "page": 2, "score": 0.03, "dense_score": 0.6,
                      "text": "long passage text is not stored", "given": True}],
        "index_version": "v1", "chain_id": chain_id, "profile": "x86", "generation_config": {"max_tokens": 8},
        "timings": {"retrieval_ms": 3.0, "ttft_ms": 40.0, "total_ms": 90.0, "prompt_tokens": 300,
                    "output_tokens": 20, "decode_tps": 30.0, "embed_ms": 2.0},
        "error": None, "client": client, "key_name": None,
    }


@pytest.fixture()
def log(tmp_path: Path):
    lg = AnswerLog(tmp_path / "gateway.db")
    yield lg
    lg.close()


def test_migrations_are_ordered_recorded_and_idempotent(tmp_path: Path) -> None:
    path = tmp_path / "gateway.db"
    db = gdb.connect(path)
    applied = db.execute("SELECT version, name FROM _migrations ORDER BY version").fetchall()
    assert applied == [(i + 1, name) for i, (name, _) in enumerate(gdb.MIGRATIONS)]
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert {"answers", "chains", "feedback", "api_keys", "jobs", "replay_runs", "replay_items"} <= set(
        db.table_names())
    db.conn.close()
    db = gdb.connect(path)  # opening again applies nothing and keeps the record
    assert gdb.migrate(db.conn) == []
    assert gdb.schema_version(db) == len(gdb.MIGRATIONS)
    # A database whose migration history disagrees with this code is refused clearly.
    db.conn.execute("UPDATE _migrations SET name = 'something-else' WHERE version = 2")
    with pytest.raises(RuntimeError, match="different manualqa version"):
        gdb.migrate(db.conn)


def test_ids_sort_by_creation_time() -> None:
    ids = [gdb.new_id() for _ in range(2000)]
    assert ids == sorted(ids) and len(set(ids)) == 2000 and all(len(i) == 26 for i in ids)


def test_record_get_chain_stored_once(log: AnswerLog) -> None:
    chain = {"chain_id": "chainA", "model": "smollm2", "quantization": "Q4_1"}
    a, b = make_row(1), make_row(2)
    log.record(a, chain=chain)
    log.record(b, chain=chain)
    got = log.get(a["id"])
    assert got["question"] == "question 1?" and got["citations"][0]["page"] == 2
    assert got["passages"] == [{"chunk_id": "c1", "manual": "m.pdf", "page": 2, "score": 0.03,
                                "dense_score": 0.6, "given": True}]  # ids and scores, no text
    assert got["ttft_ms"] == 40.0 and got["prompt_tokens"] == 300 and got["timings"]["embed_ms"] == 2.0
    assert got["index_version"] == "v1" and got["chain_id"] == "chainA"
    assert log.chain("chainA")["quantization"] == "Q4_1"
    db = gdb.connect(log.path)
    assert db.execute("SELECT count(*) FROM chains").fetchone()[0] == 1
    assert log.get("nope") is None


def test_query_filters_paging_and_since(log: AnswerLog) -> None:
    rows = [make_row(i, outcome="not_found" if i % 3 == 0 else "answered", client="api" if i % 2 else "cli")
            for i in range(12)]
    for r in rows:
        log.record(r)
    newest_first = log.query(limit=100)
    assert [r["id"] for r in newest_first] == sorted((r["id"] for r in rows), reverse=True)
    assert {r["outcome"] for r in log.query(outcome="not_found")} == {"not_found"}
    assert len(log.query(outcome="not_found")) == 4 and log.count(outcome="not_found") == 4
    assert len(log.query(client="api", outcome="answered")) == 4
    page1, page2 = log.query(limit=5), log.query(limit=5, offset=5)
    assert not {r["id"] for r in page1} & {r["id"] for r in page2}
    assert len(log.query(since="1h")) == 12 and log.query(since="2099-01-01") == []
    with pytest.raises(LogError, match="since"):
        log.query(since="yesterday-ish")
    with pytest.raises(LogError, match="outcome"):
        log.query(outcome="maybe")
    assert parse_since("2024-05-01") == "2024-05-01T00:00:00.000Z"


def test_export_jsonl_and_csv(log: AnswerLog) -> None:
    rows = [make_row(i) for i in range(3)]
    for r in rows:
        log.record(r)
    out = io.StringIO()
    assert log.export("jsonl", out) == 3
    lines = [json.loads(x) for x in out.getvalue().splitlines()]
    assert [x["id"] for x in lines] == [r["id"] for r in rows]  # oldest first
    assert lines[0]["citations"][0]["manual"] == "m.pdf"
    table = list(csv.DictReader(io.StringIO(log.export_text("csv"))))
    assert [t["id"] for t in table] == [r["id"] for r in rows]
    assert json.loads(table[1]["citations"])[0]["page"] == rows[1]["citations"][0]["page"]
    with pytest.raises(LogError):
        log.export("xml", io.StringIO())


def test_feedback_references_an_answer(log: AnswerLog) -> None:
    r = make_row(1)
    log.record(r)
    log.add_feedback(r["id"], 1, "right page")
    log.add_feedback(r["id"], -1)
    assert [(f["thumbs"], f["comment"]) for f in log.get(r["id"])["feedback"]] == [(1, "right page"), (-1, "")]
    with pytest.raises(LogError, match="no answer"):
        log.add_feedback("missing", 1)
    with pytest.raises(LogError, match="thumbs"):
        log.add_feedback(r["id"], 5)


def test_the_answer_list_carries_each_answers_feedback(log: AnswerLog) -> None:
    """Admins review the log for technicians' verdicts: the list, not only one answer, must carry them."""
    rows = [make_row(i) for i in range(3)]
    for r in rows:
        log.record(r)
    log.add_feedback(rows[0]["id"], -1, "wrong torque")
    log.add_feedback(rows[2]["id"], 1)
    log.add_feedback(rows[2]["id"], -1, "second opinion")
    listed = {r["id"]: r["feedback"] for r in log.query(limit=10)}
    assert [(f["thumbs"], f["comment"]) for f in listed[rows[0]["id"]]] == [(-1, "wrong torque")]
    assert listed[rows[1]["id"]] == []
    assert [f["thumbs"] for f in listed[rows[2]["id"]]] == [1, -1]


def test_rejects_a_row_without_outcome(log: AnswerLog) -> None:
    bad = make_row(1)
    bad["outcome"] = "great"
    with pytest.raises(LogError):
        log.record(bad)


def test_concurrent_records_lose_nothing(log: AnswerLog) -> None:
    n_threads, per_thread = 50, 4
    ids: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(n_threads)

    def work(t: int) -> None:
        start.wait()
        for j in range(per_thread):
            row = make_row(t * 100 + j, chain_id=f"chain{t % 3}")
            log.record(row, chain={"t": t % 3})
            with lock:
                ids.append(row["id"])

    threads = [threading.Thread(target=work, args=(t,)) for t in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert log.count() == n_threads * per_thread
    stored = [r["id"] for r in log.query(limit=10_000)]
    assert sorted(stored) == sorted(ids) and len(set(stored)) == len(ids)
    assert gdb.connect(log.path).execute("SELECT count(*) FROM chains").fetchone()[0] == 3


def test_record_does_not_wait_for_a_locked_database_and_close_drains(tmp_path: Path) -> None:
    path = tmp_path / "gateway.db"
    log = AnswerLog(path)
    blocker = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
    blocker.execute("BEGIN EXCLUSIVE")  # another process holds the write lock for a while
    rows = [make_row(i) for i in range(20)]
    # The answering thread is not held up by the lock: every record() returns while the database
    # stays locked (a write would wait SQLite's 30 s busy timeout, then retry), its row queued.
    answering = threading.Thread(target=lambda: [log.record(r) for r in rows])
    answering.start()
    answering.join(60)
    assert not answering.is_alive(), "record() waited for the locked database"
    assert log.pending == 20  # all queued, none written yet
    threading.Timer(0.5, lambda: blocker.execute("COMMIT")).start()
    log.close()  # drains the queue before returning (atexit does the same)
    fresh = AnswerLog(path)
    assert fresh.count() == 20
    fresh.close()
    blocker.close()


def test_record_after_close_still_writes(tmp_path: Path) -> None:
    log = AnswerLog(tmp_path / "gateway.db")
    log.close()
    r = make_row(1)
    log.record(r)
    assert AnswerLog(tmp_path / "gateway.db").get(r["id"])["id"] == r["id"]


def test_outcome_names_outside_python_match_the_one_list() -> None:
    """OUTCOMES is the one list; the admin page's filter and the CLI's exit codes name each one."""
    from gateway.cli.answer import EXIT_BY_OUTCOME

    html = (Path(__file__).resolve().parents[1] / "ui" / "templates" / "admin.html").read_text()
    boxes = re.search(r'<fieldset id="outcome-filter"(.*?)</fieldset>', html, re.S).group(1)
    assert tuple(re.findall(r'<input type="checkbox" name="outcome" value="(\w+)">\1</label>', boxes)) == OUTCOMES
    assert set(EXIT_BY_OUTCOME) == set(OUTCOMES)
