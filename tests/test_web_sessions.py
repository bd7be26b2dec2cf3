"""Admin cookie sessions live in gateway.db: they survive a restart, hold no raw session id, and still
end at once when their key is revoked, at logout, or when they expire.

One real server, restarted on the same data directory; plus the repository on its own.
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path
from typing import Any

import httpx
import pytest

from gateway.records.db import opened
from gateway.records.keys import KeyStore
from gateway.records.sessions import SessionStore, id_hash
from retrieval.versions import IndexStore
from tests.support.server import SCRIPTED_PROFILE, GatewayServer

CONFIG = "[server]\nallow_anonymous_read = false\n"


@pytest.fixture(scope="module")
def server(sample_data_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    srv = GatewayServer(sample_data_dir, tmp_path_factory.mktemp("web-sessions"), config=CONFIG,
                        profile=SCRIPTED_PROFILE.format(script="Six to 36 volts [1].", delay=0.0))
    srv.start()
    yield srv
    srv.stop()


def restart(srv: GatewayServer) -> None:
    srv.stop()
    srv.start()


def rows(srv: GatewayServer) -> list[tuple[Any, ...]]:
    with sqlite3.connect(srv.data / "gateway.db") as con:
        return con.execute("select id_hash, key_hash, csrf, created, expires from admin_sessions").fetchall()


def db_bytes(srv: GatewayServer) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(srv.data.glob("gateway.db*")))


def login(srv: GatewayServer, name: str) -> tuple[httpx.Client, str, str]:
    key = srv.admin_key(name)
    client = httpx.Client(base_url=srv.url, timeout=30)
    r = client.post("/admin/login", json={"key": key})
    assert r.status_code == 200, r.text
    return client, r.json()["csrf"], client.cookies["mqa_session"]


def activate(srv: GatewayServer, client: httpx.Client, csrf: str | None) -> httpx.Response:
    """An admin write: re-activate the active version (read from the data directory, not the API)."""
    active = IndexStore(srv.data).active_id()
    headers = {"X-CSRF-Token": csrf} if csrf is not None else {}
    return client.post(f"/api/v1/index/versions/{active}/activate", headers=headers)


def test_session_survives_a_restart_and_db_holds_no_session_id(server: GatewayServer) -> None:
    client, csrf, sid = login(server, "survivor")
    assert activate(server, client, csrf).status_code == 200

    restart(server)

    r = client.get("/admin/session")
    assert r.status_code == 200 and r.json() == {"name": "survivor", "role": "admin", "csrf": csrf}
    assert activate(server, client, csrf).status_code == 200  # an admin write with the same cookie and token
    r = activate(server, client, None)
    assert r.status_code == 403 and r.json()["error"]["code"] == "csrf_failed"  # CSRF is still checked
    assert activate(server, client, "wrong" + csrf).status_code == 403

    (row,) = [r for r in rows(server) if r[2] == csrf]
    assert row[0] == hashlib.sha256(sid.encode()).hexdigest() == id_hash(sid)
    assert row[3].endswith("Z") and row[4].endswith("Z") and row[3] < row[4]
    assert sid.encode() not in db_bytes(server)  # only its hash, in the file and in the WAL
    client.close()


def test_revocation_after_a_restart_ends_the_session(server: GatewayServer) -> None:
    client, csrf, _ = login(server, "revoked-later")
    other, other_csrf, _ = login(server, "stays")
    restart(server)
    assert client.get("/admin/session").status_code == 200

    server.cli("keys", "revoke", "revoked-later")

    r = client.get("/admin/session")
    assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized"
    assert activate(server, client, csrf).status_code == 401
    assert not [r for r in rows(server) if r[2] == csrf]  # deleted, not only refused
    assert activate(server, other, other_csrf).status_code == 200  # another key's session is untouched
    client.close()
    other.close()


def test_logout_deletes_the_row(server: GatewayServer) -> None:
    client, csrf, _ = login(server, "leaver")
    assert [r for r in rows(server) if r[2] == csrf]
    assert client.post("/admin/logout").status_code == 200
    assert not [r for r in rows(server) if r[2] == csrf]
    assert client.get("/admin/session").status_code == 401
    client.close()


def test_an_expired_session_is_refused_and_pruned(server: GatewayServer) -> None:
    client, csrf, _ = login(server, "expiring")
    with sqlite3.connect(server.data / "gateway.db") as con:
        con.execute("update admin_sessions set expires = '2000-01-01T00:00:00.000Z' where csrf = ?", [csrf])
    assert client.get("/admin/session").status_code == 401
    assert not [r for r in rows(server) if r[2] == csrf]
    client.close()


# -- the repository on its own -----------------------------------------------------------------

def test_store_create_get_drop_and_prune(tmp_path: Path) -> None:
    db = tmp_path / "gateway.db"
    keys = KeyStore(db)
    admin = keys.verify(keys.create("ops", "admin"))
    assert admin is not None
    store = SessionStore(db)
    sid, session = store.create(admin)
    got = store.get(sid)
    assert got is not None and got.principal == admin and got.principal.key_hash == admin.key_hash
    assert got.csrf == session.csrf and store.get(sid + "x") is None and store.get(None) is None

    sid2, _ = store.create(admin)
    assert store.drop(sid2) and not store.drop(sid2) and store.get(sid2) is None

    short = SessionStore(db, ttl_s=-1)  # born expired
    old, _ = short.create(admin)
    assert store.prune() == 1 and store.get(old) is None and store.get(sid) is not None

    assert store.drop_key(admin.key_hash) == 1 and store.get(sid) is None
    with opened(db) as conn:
        assert conn.execute("select count(*) from admin_sessions").fetchone()[0] == 0
    with pytest.raises(ValueError):
        store.create(type(admin)("nokey", "admin"))
