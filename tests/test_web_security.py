"""Security of the server: keys (hash only), roles, anonymous read off, admin cookie session + CSRF,
upload limits (413/415/422) that leave the index alone, JSON body cap, no path traversal, rate limit,
CORS off, allowed hosts. One real server with a strict configuration.
"""

from __future__ import annotations

import hashlib
import http.client
import io
import sqlite3
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.http import bearer, error_of
from tests.support.server import SCRIPTED_PROFILE, GatewayServer

pytestmark = pytest.mark.slow

CONFIG = """
[server]
allow_anonymous_read = false
max_upload_mb = 1
max_json_kb = 16
rate_limit_per_minute = 3
allowed_hosts = ["127.0.0.1", "localhost"]
[ingest]
max_pages = 10
"""
QUESTION = "What input voltage range does the piston board accept?"


@pytest.fixture(scope="module")
def server(sample_data_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    srv = GatewayServer(sample_data_dir, tmp_path_factory.mktemp("web-sec"), config=CONFIG,
                        profile=SCRIPTED_PROFILE.format(script="Six to 36 volts [1].", delay=0.0))
    srv.start()
    srv.admin = srv.admin_key()
    srv.reader = srv.cli("keys", "create", "reader", "--role", "reader").stdout.strip()
    yield srv
    srv.stop()




def voron_pages(n_text: int, n_blank: int = 0) -> bytes:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter()
    for page in PdfReader(Path(__file__).parent.parent / "sample_manuals/voron0_setup_guide.pdf").pages[:n_text]:
        writer.add_page(page)
    for _ in range(n_blank):
        writer.add_blank_page(612, 792)
    buf = io.BytesIO()
    writer.write(buf)
    return buf.getvalue()


def encrypted_pdf() -> bytes:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(voron_pages(2))))
    writer.encrypt(user_password="secret", owner_password="owner", algorithm="RC4-128")
    buf = io.BytesIO()
    writer.write(buf)
    return buf.getvalue()


def snapshot(server: GatewayServer) -> tuple[str, Any]:
    """The active version and the hits of a fixed search: both must survive bad uploads."""
    h = bearer(server.reader)
    active = httpx.get(server.url + "/api/v1/index/versions", headers=h).json()["active"]
    hits = httpx.post(server.url + "/api/v1/search", headers=h, json={"query": "hall effect sensor", "k": 5}).json()
    return active, [(x["chunk_id"], round(x["score"], 6)) for x in hits["hits"]]


# -- keys and roles ----------------------------------------------------------------------------

def test_key_is_printed_once_and_stored_as_hash(server: GatewayServer) -> None:
    out = server.cli("keys", "create", "tablet-7", "--role", "reader")
    key = out.stdout.strip()
    assert key.startswith("mqa_") and len(key) > 40 and "\n" not in key
    assert "shown only this once" in out.stderr
    listed = server.cli("keys", "list", "--json").stdout
    assert "tablet-7" in listed and key not in listed
    for f in server.data.glob("gateway.db*"):  # the database and its WAL
        assert key.encode() not in f.read_bytes(), f"{f.name} holds the key in clear"
    with sqlite3.connect(server.data / "gateway.db") as db:
        stored = db.execute("select key_hash, role from api_keys where name = 'tablet-7'").fetchone()
    assert stored == (hashlib.sha256(key.encode()).hexdigest(), "reader")
    assert httpx.get(server.url + "/api/v1/manuals", headers=bearer(key)).status_code == 200
    server.cli("keys", "revoke", "tablet-7")
    error_of(httpx.get(server.url + "/api/v1/manuals", headers=bearer(key)), 401)


def test_anonymous_read_is_refused_when_configured(server: GatewayServer) -> None:
    for path in ("/api/v1/manuals", "/api/v1/answers", "/api/v1/index/versions", "/api/v1/deployment"):
        error_of(httpx.get(server.url + path), 401)
        assert httpx.get(server.url + path, headers=bearer(server.reader)).status_code == 200
    error_of(httpx.post(server.url + "/api/v1/search", json={"query": "fan"}), 401)
    error_of(httpx.post(server.url + "/api/v1/ask", json={"question": QUESTION}), 401)
    assert httpx.get(server.url + "/api/v1/health").status_code == 200  # probes need no key


def test_reader_cannot_change_anything_admin_can(server: GatewayServer) -> None:
    active = httpx.get(server.url + "/api/v1/index/versions", headers=bearer(server.reader)).json()["active"]
    sha = httpx.get(server.url + "/api/v1/manuals", headers=bearer(server.reader)).json()["manuals"][0]["id"]
    writes = [("POST", "/api/v1/manuals", {"files": {"data": ("a.pdf", voron_pages(1), "application/pdf")}}),
              ("DELETE", f"/api/v1/manuals/{sha}", {}),
              ("POST", f"/api/v1/index/versions/{active}/activate", {}),
              ("POST", "/api/v1/index/rollback", {})]
    for method, path, extra in writes:
        error_of(httpx.request(method, server.url + path, **extra), 401)
        err = error_of(httpx.request(method, server.url + path, headers=bearer(server.reader), **extra), 403)
        assert "admin" in err["message"]
    r = httpx.post(server.url + f"/api/v1/index/versions/{active}/activate", headers=bearer(server.admin))
    assert r.status_code == 200 and r.json() == {"active": active}
    assert len(httpx.get(server.url + "/api/v1/manuals", headers=bearer(server.reader)).json()["manuals"]) == 2


# -- admin cookie session with CSRF ------------------------------------------------------------

def test_admin_login_cookie_and_csrf(server: GatewayServer) -> None:
    with httpx.Client(base_url=server.url) as c:
        error_of(c.post("/admin/login", json={"key": server.reader}), 403)
        error_of(c.post("/admin/login", json={"key": "mqa_not_a_key"}), 401)
        assert "mqa_session" not in c.cookies
        r = c.post("/admin/login", json={"key": server.admin})
        assert r.status_code == 200
        set_cookie = r.headers["set-cookie"]
        assert "mqa_session=" in set_cookie and "HttpOnly" in set_cookie
        assert "samesite=strict" in set_cookie.lower()
        assert server.admin not in set_cookie
        csrf = r.json()["csrf"]
        assert r.json()["role"] == "admin" and len(csrf) >= 20

        active = c.get("/api/v1/index/versions").json()["active"]  # the cookie reads
        activate = f"/api/v1/index/versions/{active}/activate"
        assert error_of(c.post(activate), 403)["code"] == "csrf_failed"
        error_of(c.post(activate, headers={"X-CSRF-Token": "wrong" + csrf}), 403)
        r = c.post(activate, headers={"X-CSRF-Token": csrf})
        assert r.status_code == 200 and r.json()["active"] == active
        # a reader route written to with the cookie but no token is treated as anonymous, not as admin:
        # here anonymous reading is off, so 401 (never a 403 that would break reader pages)
        assert error_of(c.post("/api/v1/search", json={"query": "firmware"}), 401)["code"] == "unauthorized"
        r = c.post("/api/v1/search", json={"query": "firmware"}, headers={"X-CSRF-Token": csrf})
        assert r.status_code == 200
        assert c.get("/admin/session").json()["csrf"] == csrf
        assert c.post("/admin/logout").status_code == 200
        c.cookies.clear()
        error_of(c.post(activate, headers={"X-CSRF-Token": csrf}), 401)


# -- uploads: limits and clear errors; the index is untouched -----------------------------------

def test_bad_uploads_are_refused_and_change_nothing(server: GatewayServer) -> None:
    before = snapshot(server)
    good = voron_pages(2)
    cases = [
        ("big.pdf", b"%PDF-1.4\n" + b"0" * (1024 * 1024 + 200_000), 413, "1 MB"),
        ("huge.pdf", b"%PDF-1.4\n" + b"0" * (3 * 1024 * 1024), 413, ""),
        ("notes.pdf", b"just some text, not a PDF" * 10, 415, "not a PDF"),
        ("pages.pdf", voron_pages(2, n_blank=10), 422, "page"),
        ("locked.pdf", encrypted_pdf(), 422, "password"),
        ("cut.pdf", good[: len(good) // 2], 422, "truncated"),
    ]
    for name, body, status, words in cases:
        r = httpx.post(server.url + "/api/v1/manuals", headers=bearer(server.admin), timeout=120,
                       files={"data": (name, body, "application/pdf")})
        err = error_of(r, status)
        assert words.lower() in err["message"].lower(), (name, err)
        assert server.alive()
        assert snapshot(server) == before, f"{name} changed the index"
    leftovers = [p for p in (server.data / "uploads").rglob("*") if p.is_file()] \
        if (server.data / "uploads").exists() else []
    assert leftovers == [], "refused uploads must not stay on disk"


def test_json_body_cap(server: GatewayServer) -> None:
    r = httpx.post(server.url + "/api/v1/search", headers=bearer(server.reader),
                   json={"query": "fan", "manuals": ["x" * 300] * 60})
    assert "kb" in error_of(r, 413)["message"].lower()
    assert httpx.post(server.url + "/api/v1/search", headers=bearer(server.reader),
                      json={"query": "fan"}).status_code == 200


# -- no path traversal -------------------------------------------------------------------------

def raw_get(server: GatewayServer, path: str, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    """GET exactly this path (httpx would normalise dot segments away)."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        conn.request("GET", path, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


@pytest.mark.parametrize("path", [
    "/api/v1/manuals/../../../../etc/passwd",
    "/api/v1/manuals/../../../../etc/passwd/file",
    "/api/v1/manuals/..%2f..%2f..%2f..%2fetc%2fpasswd/file",
    "/api/v1/manuals/%2e%2e/%2e%2e/%2e%2e/etc/passwd/file",
    "/api/v1/manuals/%2e%2e%2f%2e%2e%2fgateway.db/file",
    "/api/v1/manuals/..%5c..%5cgateway.db/pages/1",
    "/static/../../../../etc/passwd",
    "/static/..%2f..%2f..%2fpyproject.toml",
    "/static/%2e%2e/%2e%2e/gateway/web/app.py",
])
def test_no_path_traversal(server: GatewayServer, path: str) -> None:
    status, body = raw_get(server, path, bearer(server.reader))
    assert status in (400, 404), (status, body[:200])
    assert b"root:" not in body and b"SQLite format" not in body and b"[project]" not in body
    assert b"import" not in body


def test_raw_requests_reach_real_files(server: GatewayServer) -> None:
    """The control for the traversal cases: the same raw client does fetch what is served."""
    status, body = raw_get(server, "/static/app.js")
    assert status == 200 and body
    sha = httpx.get(server.url + "/api/v1/manuals", headers=bearer(server.reader)).json()["manuals"][0]["id"]
    status, body = raw_get(server, f"/api/v1/manuals/{sha}/file", bearer(server.reader))
    assert status == 200 and body.startswith(b"%PDF-")


def test_upload_name_cannot_escape_data_dir(server: GatewayServer) -> None:
    before = {p for p in server.workdir.parent.rglob("evil*")}
    r = httpx.post(server.url + "/api/v1/manuals", headers=bearer(server.admin), timeout=120,
                   files={"data": ("../../evil.pdf", voron_pages(3), "application/pdf")})
    assert r.status_code == 202, r.text
    assert r.json()["file_name"] == "evil.pdf"
    job_url = r.json()["job_url"]
    deadline = time.monotonic() + 300
    while (job := httpx.get(server.url + job_url, headers=bearer(server.reader)).json())["state"] not in (
            "done", "failed") and time.monotonic() < deadline:
        time.sleep(0.3)
    assert job["state"] == "done", job
    after = {p for p in server.workdir.parent.rglob("evil*")}
    assert after == before, f"files named evil* appeared: {after - before}"
    names = {m["file_name"] for m in httpx.get(server.url + "/api/v1/manuals",
                                                headers=bearer(server.reader)).json()["manuals"]}
    assert "evil.pdf" in names
    stored = [p.name for p in (server.data / "manuals").iterdir()]
    assert all(len(n) == 68 and n.endswith(".pdf") for n in stored), stored


# -- rate limit, CORS, hosts -------------------------------------------------------------------

def test_rate_limit_on_asking(server: GatewayServer) -> None:
    key = server.cli("keys", "create", "asker", "--role", "reader").stdout.strip()
    codes = []
    for _ in range(3):
        r = httpx.post(server.url + "/api/v1/ask", headers=bearer(key), timeout=60,
                       json={"question": QUESTION, "max_tokens": 2})
        codes.append(r.status_code)
    assert codes == [200, 200, 200]
    r = httpx.post(server.url + "/api/v1/ask", headers=bearer(key), json={"question": QUESTION})
    error_of(r, 429)
    assert int(r.headers["retry-after"]) >= 1
    # another client is not affected; searching is not rate limited
    assert httpx.post(server.url + "/api/v1/ask", headers=bearer(server.reader), timeout=60,
                      json={"question": QUESTION, "max_tokens": 2}).status_code == 200
    for _ in range(5):
        assert httpx.post(server.url + "/api/v1/search", headers=bearer(key),
                          json={"query": "fan"}).status_code == 200


def test_cors_is_off_by_default(server: GatewayServer) -> None:
    origin = {"Origin": "http://evil.example"}
    r = httpx.get(server.url + "/api/v1/manuals", headers={**origin, **bearer(server.reader)})
    assert r.status_code == 200 and "access-control-allow-origin" not in r.headers
    pre = httpx.options(server.url + "/api/v1/ask", headers={**origin, "Access-Control-Request-Method": "POST"})
    assert "access-control-allow-origin" not in pre.headers


def test_allowed_hosts(server: GatewayServer) -> None:
    ok = httpx.get(server.url + "/api/v1/health", headers={"Host": f"localhost:{server.port}"})
    assert ok.status_code == 200
    for host in ("evil.example", f"evil.example:{server.port}", "127.0.0.1.evil.example"):
        r = httpx.get(server.url + "/api/v1/health", headers={"Host": host})
        assert 400 <= r.status_code < 500
        assert error_of(r, r.status_code)["code"] == "invalid_host"
    status, _ = raw_get(server, "/", {"Host": "evil.example"})
    assert status == 400


def test_a_request_checks_its_key_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Guards and handlers all ask who the caller is; gateway.db is asked once per request."""
    from litestar.testing import TestClient

    from gateway.config import Settings
    from gateway.records.keys import KeyStore
    from gateway.web.app import create_app

    settings = Settings(data_dir=tmp_path / "data")
    key = KeyStore(settings.db_path).create("counter", "admin")
    calls: list[str] = []
    real = KeyStore.verify
    monkeypatch.setattr(KeyStore, "verify", lambda self, k: (calls.append(k), real(self, k))[1])
    with TestClient(create_app(settings, warm=False)) as client:
        auth = {"Authorization": f"Bearer {key}"}
        for method, url in (("GET", "/api/v1/answers"), ("POST", "/api/v1/index/rollback")):
            calls.clear()
            r = client.request(method, url, headers=auth)
            assert r.status_code in (200, 409), r.text  # rollback with no index: 409, after auth
            assert len(calls) == 1, (url, len(calls))
