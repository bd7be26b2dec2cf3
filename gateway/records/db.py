"""gateway.db: one SQLite file (WAL) for the answer log, feedback, API keys, admin sessions, jobs, replay runs.

Migrations are an ordered list applied on open, each recorded in ``_migrations``; a migration is
never edited once shipped, only appended to. Opening takes an IMMEDIATE transaction per pending
migration, so two processes opening a fresh database at once cannot both apply one.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

# The records' modules take a row's id and time from here; gateway.stamps holds them (the answer core uses them too).
from gateway.stamps import iso_utc as iso_utc
from gateway.stamps import new_id as new_id
from gateway.stamps import utcnow as utcnow

if TYPE_CHECKING:
    from sqlite_utils import Database

# (name, statements). Append only: the position is the migration's version number.
MIGRATIONS: list[tuple[str, list[str]]] = [
    ("answers", [
        """CREATE TABLE answers (
            id TEXT PRIMARY KEY,            -- time-ordered, sortable
            time TEXT NOT NULL,             -- ISO 8601 UTC
            question TEXT NOT NULL,
            scope TEXT NOT NULL DEFAULT '[]',         -- JSON list of manual names
            answer TEXT NOT NULL DEFAULT '',
            outcome TEXT NOT NULL,          -- answered | not_found | error | cancelled
            mode TEXT NOT NULL,             -- generate | extractive | extractive_fallback
            flags TEXT NOT NULL DEFAULT '[]',         -- JSON list
            citations TEXT NOT NULL DEFAULT '[]',     -- JSON list of Citation dicts
            passages TEXT NOT NULL DEFAULT '[]',      -- JSON: retrieved chunk ids, pages, scores
            index_version TEXT,
            chain_id TEXT REFERENCES chains(chain_id),
            profile TEXT,
            generation_config TEXT,         -- JSON
            retrieval_ms REAL, embed_ms REAL, ttft_ms REAL, total_ms REAL,
            prompt_tokens INTEGER, output_tokens INTEGER, decode_tps REAL,
            timings TEXT NOT NULL DEFAULT '{}',       -- JSON: every timing, including the above
            client TEXT NOT NULL,           -- cli | api | ui | replay
            key_name TEXT,
            error TEXT
        )""",
        "CREATE INDEX answers_time ON answers(time)",
        "CREATE INDEX answers_outcome ON answers(outcome, time)",
        "CREATE INDEX answers_client ON answers(client, time)",
        """CREATE TABLE chains (
            chain_id TEXT PRIMARY KEY,
            json TEXT NOT NULL,
            first_seen TEXT NOT NULL
        )""",
    ]),
    ("feedback", [
        """CREATE TABLE feedback (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            answer_id TEXT NOT NULL REFERENCES answers(id),
            thumbs INTEGER NOT NULL CHECK (thumbs IN (-1, 1)),
            comment TEXT NOT NULL DEFAULT '',
            time TEXT NOT NULL,
            key_name TEXT
        )""",
        "CREATE INDEX feedback_answer ON feedback(answer_id)",
    ]),
    ("api_keys", [
        """CREATE TABLE api_keys (
            name TEXT PRIMARY KEY,
            role TEXT NOT NULL CHECK (role IN ('reader', 'admin')),
            key_hash TEXT NOT NULL UNIQUE,
            created TEXT NOT NULL,
            last_used TEXT,
            revoked TEXT
        )""",
    ]),
    ("jobs", [
        """CREATE TABLE jobs (
            id TEXT PRIMARY KEY,
            kind TEXT NOT NULL,
            state TEXT NOT NULL,            -- queued | running | done | failed
            progress INTEGER NOT NULL DEFAULT 0,
            total INTEGER,
            message TEXT NOT NULL DEFAULT '',
            created TEXT NOT NULL,
            updated TEXT NOT NULL,
            result TEXT                     -- JSON
        )""",
        "CREATE INDEX jobs_created ON jobs(created)",
    ]),
    ("replay", [
        """CREATE TABLE replay_runs (
            id TEXT PRIMARY KEY,
            label TEXT NOT NULL DEFAULT '',
            time TEXT NOT NULL,
            questions_file TEXT,
            deployment TEXT NOT NULL DEFAULT '{}',    -- JSON: profile, chain id, index version
            metrics TEXT NOT NULL DEFAULT '{}'        -- JSON
        )""",
        """CREATE TABLE replay_items (
            run_id TEXT NOT NULL REFERENCES replay_runs(id) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            question_id TEXT NOT NULL,
            answer_id TEXT,
            outcome TEXT,
            answer TEXT,
            citations TEXT NOT NULL DEFAULT '[]',     -- JSON
            retrieved TEXT NOT NULL DEFAULT '[]',     -- JSON: manual/page/score per hit
            timings TEXT NOT NULL DEFAULT '{}',       -- JSON
            data TEXT NOT NULL DEFAULT '{}',          -- JSON: the question row and anything else
            PRIMARY KEY (run_id, position)
        )""",
    ]),
    ("answer_support", [
        # draft: what the model wrote; answer keeps only its supported sentences (gateway.answer.support).
        "ALTER TABLE answers ADD COLUMN draft TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE answers ADD COLUMN support TEXT NOT NULL DEFAULT '[]'",  # JSON, one per sentence
    ]),
    ("admin_sessions", [
        # gateway.records.sessions: admin cookie sessions, so a restart does not log admins out.
        """CREATE TABLE admin_sessions (
            id_hash TEXT PRIMARY KEY,       -- sha256 (hex) of the cookie value; the value itself is never stored
            key_hash TEXT NOT NULL REFERENCES api_keys(key_hash) ON DELETE CASCADE,
            csrf TEXT NOT NULL,             -- the session's CSRF token (why in plain: sessions.py)
            created TEXT NOT NULL,          -- ISO 8601 UTC
            expires TEXT NOT NULL           -- ISO 8601 UTC, same format: compared as text
        )""",
        "CREATE INDEX admin_sessions_key ON admin_sessions(key_hash)",
        "CREATE INDEX admin_sessions_expires ON admin_sessions(expires)",
    ]),
    ("manual_titles", [
        # gateway.records.titles: the display title an admin gave a manual (by sha256, across versions).
        """CREATE TABLE manual_titles (
            sha256 TEXT PRIMARY KEY,
            title TEXT NOT NULL,
            updated TEXT NOT NULL           -- ISO 8601 UTC
        )""",
    ]),
    ("admin_audit", [
        # gateway.records.audit: one row per admin action over HTTP (login, activate, upload, ...), refused or not.
        """CREATE TABLE admin_audit (
            id TEXT PRIMARY KEY,            -- time-ordered (new_id)
            time TEXT NOT NULL,             -- ISO 8601 UTC
            actor TEXT NOT NULL,            -- the key's name, or '' when none was recognised
            via TEXT NOT NULL,              -- key (Authorization header) | session (admin cookie) | none
            action TEXT NOT NULL,           -- e.g. index.activate, manual.upload, key.revoke, login
            target TEXT NOT NULL DEFAULT '',          -- the version, manual, key, mode ... acted on
            result TEXT NOT NULL,           -- ok | refused (401/403/CSRF) | failed (any other error)
            status INTEGER NOT NULL,        -- the HTTP status answered
            detail TEXT NOT NULL DEFAULT ''           -- the error's message, or what changed
        )""",
        "CREATE INDEX admin_audit_time ON admin_audit(time)",
        "CREATE INDEX admin_audit_action ON admin_audit(action, time)",
    ]),
]


def migrated_columns(table: str, migrations: list[tuple[str, list[str]]] | None = None) -> list[str]:
    """The columns `migrations` (default: MIGRATIONS) give `table` on a fresh database, in table order:
    what `SELECT *` reads on every gateway.db, old or new, since migrations only append."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        _apply(conn, MIGRATIONS if migrations is None else migrations)
        return [str(row[1]) for row in conn.execute(f"PRAGMA table_info({table})")]
    finally:
        conn.close()


def connect(path: str | Path) -> Database:
    """A sqlite_utils.Database on gateway.db (WAL, foreign keys on), migrated to the latest schema.

    Each thread should hold its own connection: sqlite3 connections are not shared across threads.
    """
    import sqlite_utils

    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(p), timeout=30.0, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA busy_timeout = 30000")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")
    try:
        current = conn.execute("SELECT max(version) FROM _migrations").fetchone()[0] or 0
    except sqlite3.OperationalError:  # a fresh file: no _migrations table yet
        current = 0
    if current < len(MIGRATIONS):
        migrate(conn)
    return sqlite_utils.Database(conn)


@contextmanager
def opened(path: str | Path) -> Iterator[Database]:
    """The one way repositories reach gateway.db: a migrated connection, closed when done.

    Connections are short-lived and per use (or per worker thread): SQLite's WAL lets readers
    and the one writer proceed side by side, and nothing is left open for the GC to close.
    """
    db = connect(path)
    try:
        yield db
    finally:
        db.conn.close()


def migrate(conn: sqlite3.Connection) -> list[str]:
    """Apply pending migrations in order; returns the names applied now."""
    return _apply(conn, MIGRATIONS)


def _apply(conn: sqlite3.Connection, migrations: list[tuple[str, list[str]]]) -> list[str]:
    conn.execute("CREATE TABLE IF NOT EXISTS _migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
                 " applied_at TEXT NOT NULL)")
    done_now: list[str] = []
    for version, (name, statements) in enumerate(migrations, start=1):
        conn.execute("BEGIN IMMEDIATE")
        try:
            row = conn.execute("SELECT name FROM _migrations WHERE version = ?", (version,)).fetchone()
            if row is not None:
                if row[0] != name:
                    raise RuntimeError(f"gateway.db migration {version} is {row[0]!r}, this code expects "
                                       f"{name!r}: the database belongs to a different manualqa version")
                conn.execute("COMMIT")
                continue
            for statement in statements:
                conn.execute(statement)
            conn.execute("INSERT INTO _migrations (version, name, applied_at) VALUES (?, ?, ?)",
                         (version, name, utcnow()))
            conn.execute("COMMIT")
            done_now.append(name)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return done_now


def schema_version(db: Database) -> int:
    row = db.execute("SELECT max(version) FROM _migrations").fetchone()
    return int(row[0] or 0)
