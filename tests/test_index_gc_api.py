"""Old index versions removed over HTTP (issue 48, item 9): POST /api/v1/index/gc runs the function
`manualqa index gc` runs (retrieval.versions.IndexStore.gc) against a real gateway. It keeps the newest
N, the active version and the one a rollback returns to, says what it removed and the bytes freed, and
is in the audit trail as `index.gc`; GET /api/v1/index/gc?keep=N previews it. Bad input is a 400 in the
one JSON error shape, a held index lock a 409, a reader key a 403: each leaves every version on disk.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.http import bearer, error_of
from tests.support.server import SCRIPTED_PROFILE, GatewayServer

pytestmark = pytest.mark.timeout(600)
PROFILE = SCRIPTED_PROFILE.format(script="Six to 36 volts [1].", delay=0.0)


def three_versions(srv: GatewayServer, key: str) -> tuple[str, str, str]:
    """From the sample index v0 (both manuals): v1 = v0 without the first manual, then v0 active
    again and v2 = v0 without the second. v2 is active and its parent, a rollback's target, is v0;
    v1 is nobody's parent. Removing a manual re-uses chunks and vectors: no embedding, seconds."""
    v0 = httpx.get(srv.url + "/api/v1/index/versions", headers=bearer(key)).json()["active"]
    manuals = httpx.get(srv.url + "/api/v1/manuals", headers=bearer(key)).json()["manuals"]
    assert len(manuals) == 2
    made = []
    for manual in manuals:
        r = httpx.post(f"{srv.url}/api/v1/index/versions/{v0}/activate", headers=bearer(key), timeout=120)
        assert r.status_code == 200, r.text
        r = httpx.delete(f"{srv.url}/api/v1/manuals/{manual['id']}", headers=bearer(key), timeout=120)
        assert r.status_code == 200, r.text
        made.append(r.json()["version"])
    v1, v2 = made
    listed = httpx.get(srv.url + "/api/v1/index/versions", headers=bearer(key)).json()
    assert listed["active"] == v2 and [v["id"] for v in reversed(listed["versions"])] == [v0, v1, v2]
    assert next(v for v in listed["versions"] if v["id"] == v2)["parent"] == v0
    return v0, v1, v2


@pytest.fixture(scope="module")
def server(sample_data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayServer]:
    srv = GatewayServer(sample_data_dir, tmp_path_factory.mktemp("index-gc-api"),
                        config="[server]\nallow_anonymous_read = false\n", profile=PROFILE)
    srv.start()
    try:
        srv.admin = srv.admin_key("gc-admin")
        srv.reader = srv.cli("keys", "create", "gc-reader", "--role", "reader").stdout.strip()
        srv.v0, srv.v1, srv.v2 = three_versions(srv, srv.admin)
        yield srv
    finally:
        srv.stop()


def on_disk(srv: GatewayServer) -> dict[str, str]:
    """Every file of the index versions, the originals and the pointer, by content."""
    found = {}
    for folder in ("indexes", "manuals"):
        for path in sorted((srv.data / folder).rglob("*")):
            if path.is_file():
                found[str(path.relative_to(srv.data))] = hashlib.sha256(path.read_bytes()).hexdigest()
    found["ACTIVE"] = (srv.data / "ACTIVE").read_text()
    return found


def gc(srv: GatewayServer, key: str, headers: dict[str, str] | None = None, **kwargs: Any) -> httpx.Response:
    return httpx.post(srv.url + "/api/v1/index/gc", headers={**bearer(key), **(headers or {})}, timeout=120,
                      **kwargs)


def versions(srv: GatewayServer) -> list[str]:
    listed = httpx.get(srv.url + "/api/v1/index/versions", headers=bearer(srv.admin)).json()
    return [v["id"] for v in reversed(listed["versions"])]


def test_bad_input_a_reader_and_a_held_lock_remove_nothing(server: GatewayServer) -> None:
    before = on_disk(server)
    for body in ({"keep": 0}, {"keep": -2}, {"keep": "two"}, {"keep": 1.5}, {"keep": None}, {},
                 {"keep": 1, "dry_run": True}, [1], {"keep": 10**9}):
        err = error_of(gc(server, server.admin, json=body), 400)
        assert err["code"] in ("invalid_request", "invalid_json"), (body, err)
    error_of(gc(server, server.admin, content=b"keep=1", headers={"Content-Type": "application/json"}), 400)
    error_of(gc(server, server.admin), 400)  # no body at all
    for query in ("keep=0", "keep=x", ""):
        error_of(httpx.get(f"{server.url}/api/v1/index/gc?{query}", headers=bearer(server.admin)), 400)
    assert error_of(gc(server, server.reader, json={"keep": 1}), 403)["code"] == "forbidden"
    error_of(httpx.get(server.url + "/api/v1/index/gc?keep=1", headers=bearer(server.reader)), 403)
    error_of(httpx.post(server.url + "/api/v1/index/gc", json={"keep": 1}), 401)

    # an ingest (here: this test) holds the data directory's lock: 409, as the CLI refuses
    fd = os.open(server.data / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        err = error_of(gc(server, server.admin, json={"keep": 1}), 409)
        assert err["code"] == "conflict" and "another ingest or index operation" in err["message"]
    finally:
        os.close(fd)
    assert on_disk(server) == before and versions(server) == [server.v0, server.v1, server.v2]


def test_gc_keeps_n_the_active_version_and_the_rollback_target(server: GatewayServer) -> None:
    v0, v1, v2 = server.v0, server.v1, server.v2
    assert versions(server) == [v0, v1, v2]
    # the oldest is active: keeping the newest 1 keeps it too (and would keep its parent; it has none)
    r = httpx.post(f"{server.url}/api/v1/index/versions/{v0}/activate", headers=bearer(server.admin))
    assert r.status_code == 200, r.text
    size = sum(p.stat().st_size for p in (server.data / "indexes" / v1).rglob("*") if p.is_file())
    assert size > 0
    before = on_disk(server)
    preview = httpx.get(server.url + "/api/v1/index/gc?keep=1", headers=bearer(server.admin))
    assert preview.status_code == 200, preview.text
    assert preview.json() == {"removed": [v1], "kept": [v0, v2], "active": v0, "bytes_freed": size,
                              "manuals_removed": 0, "dry_run": True}
    assert on_disk(server) == before  # a preview removes nothing

    r = gc(server, server.admin, json={"keep": 1})
    assert r.status_code == 200, r.text
    assert r.json() == {"removed": [v1], "kept": [v0, v2], "active": v0, "bytes_freed": size,
                        "manuals_removed": 0, "dry_run": False}  # both originals: still cited by v0
    assert versions(server) == [v0, v2] and not (server.data / "indexes" / v1).exists()
    assert (server.data / "ACTIVE").read_text().strip() == v0

    # v2 active: its parent v0 is what a rollback returns to, so keep=1 removes nothing, and the
    # rollback still works afterwards
    httpx.post(f"{server.url}/api/v1/index/versions/{v2}/activate", headers=bearer(server.admin))
    r = gc(server, server.admin, json={"keep": 1})
    assert r.status_code == 200 and r.json()["removed"] == [] and r.json()["bytes_freed"] == 0, r.text
    r = httpx.post(server.url + "/api/v1/index/rollback", headers=bearer(server.admin))
    assert r.status_code == 200 and r.json()["active"] == v0, r.text

    # the audit trail names the action, what was kept and what went; the refused ones too
    trail = httpx.get(server.url + "/api/v1/audit?action=index.gc&limit=100", headers=bearer(server.admin)).json()
    done = [e for e in trail["entries"] if e["result"] == "ok"]
    assert [e["detail"] for e in done] == ["removed nothing", f"removed {v1}"]
    assert {e["target"] for e in done} == {"keep 1"} and {e["actor"] for e in done} == {"gc-admin"}
    assert any(e["result"] == "refused" and e["actor"] == "gc-reader" for e in trail["entries"])
    assert any(e["status"] == 409 for e in trail["entries"])
