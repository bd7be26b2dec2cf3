"""The admin routes that replace the command line (issue 10) on a real server: API keys, the answer
log export, the doctor and the answer mode. Each is admin only, answers bad input with the one
error shape, and gives what the CLI gives (the same library functions, compared side by side)."""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.http import bearer, error_of
from tests.support.server import SCRIPTED_PROFILE, GatewayServer

SCRIPT = "Six to 36 volts [1]."
QUESTION = "What input voltage range does the piston board accept?"


@pytest.fixture(scope="module")
def server(sample_data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayServer]:
    work = tmp_path_factory.mktemp("admin-api")
    artifact = work / "scripted"  # an artifact file with its sha256 in the profile: gate 1 can pass
    artifact.write_bytes(b"scripted test artifact\n")
    profile = SCRIPTED_PROFILE.format(script=SCRIPT, delay=0.0).replace(
        'sha256 = ""', f'sha256 = "{hashlib.sha256(artifact.read_bytes()).hexdigest()}"')
    srv = GatewayServer(sample_data_dir, work, config="[server]\nrate_limit_per_minute = 600\n", profile=profile)
    srv.start()
    srv.admin = srv.admin_key("ops")
    srv.reader = srv.cli("keys", "create", "tablet", "--role", "reader").stdout.strip()
    yield srv
    srv.stop()




def ask(srv: GatewayServer, question: str = QUESTION) -> dict[str, Any]:
    r = httpx.post(srv.url + "/api/v1/ask", headers=bearer(srv.admin), json={"question": question}, timeout=60)
    assert r.status_code == 200, r.text
    return r.json()


ADMIN_ONLY = [("GET", "/api/v1/keys", None), ("POST", "/api/v1/keys", {"name": "x1", "role": "reader"}),
              ("POST", "/api/v1/keys/ops/revoke", None), ("GET", "/api/v1/answers/export", None),
              ("POST", "/api/v1/deployment/doctor", None),
              ("POST", "/api/v1/deployment/answer-mode", {"mode": "extractive"})]


@pytest.mark.parametrize(("method", "path", "body"), ADMIN_ONLY, ids=[f"{m} {p}" for m, p, _ in ADMIN_ONLY])
def test_readers_and_anonymous_callers_are_refused(server: GatewayServer, method: str, path: str,
                                                   body: dict[str, Any] | None) -> None:
    assert error_of(httpx.request(method, server.url + path, headers=bearer(server.reader), json=body),
                    403)["code"] == "forbidden"
    error_of(httpx.request(method, server.url + path, json=body), 401)
    # nothing happened: the admin key is live, the mode unchanged
    assert httpx.get(server.url + "/api/v1/keys", headers=bearer(server.admin)).status_code == 200
    assert httpx.get(server.url + "/api/v1/deployment").json()["answer_mode"] == "generate"


def test_keys_create_list_revoke_as_the_cli_does(server: GatewayServer) -> None:
    h = bearer(server.admin)
    r = httpx.post(server.url + "/api/v1/keys", headers=h, json={"name": "kiosk-3", "role": "reader"})
    assert r.status_code == 201, r.text
    assert r.headers["cache-control"] == "no-store"  # no cache keeps the key either
    made = r.json()
    assert made["name"] == "kiosk-3" and made["role"] == "reader" and made["key"].startswith("mqa_")
    assert "only time" in made["note"]
    assert httpx.get(server.url + "/api/v1/manuals", headers=bearer(made["key"])).status_code == 200
    listed = httpx.get(server.url + "/api/v1/keys", headers=h).json()["keys"]
    assert made["key"] not in json.dumps(listed)  # shown once: never again, not even to an admin
    row = next(k for k in listed if k["name"] == "kiosk-3")
    assert row["role"] == "reader" and row["revoked"] is None and row["last_used"]  # just used above
    assert listed == json.loads(server.cli("keys", "list", "--json").stdout)  # one KeyStore, two doors
    assert error_of(httpx.post(server.url + "/api/v1/keys", headers=h, json={"name": "kiosk-3"}), 409)["code"] \
        == "conflict"

    r = httpx.post(server.url + "/api/v1/keys/kiosk-3/revoke", headers=h)
    assert r.status_code == 200, r.text
    assert r.json() == {"name": "kiosk-3", "revoked": True, "own_key": False, "admin_keys_left": 1}
    error_of(httpx.get(server.url + "/api/v1/manuals", headers=bearer(made["key"])), 401)
    assert "REVOKED" in server.cli("keys", "list").stdout
    error_of(httpx.post(server.url + "/api/v1/keys/kiosk-3/revoke", headers=h), 404)


@pytest.mark.parametrize("body", [{"name": "a/b"}, {"name": ""}, {"name": "x@revoked-1"}, {"name": "ok\n"},
                                  {"name": "ok", "role": "root"}, {"name": "ok", "extra": 1}, {"role": "admin"},
                                  {"name": "a" * 65}])
def test_bad_key_requests_are_400_with_the_error_shape(server: GatewayServer, body: dict[str, Any]) -> None:
    err = error_of(httpx.post(server.url + "/api/v1/keys", headers=bearer(server.admin), json=body), 400)
    assert err["code"] == "invalid_request"


def test_revoking_a_key_ends_its_admin_sessions_at_once(server: GatewayServer) -> None:
    h = bearer(server.admin)
    key = httpx.post(server.url + "/api/v1/keys", headers=h, json={"name": "laptop", "role": "admin"}).json()["key"]
    with httpx.Client(base_url=server.url, timeout=30) as browser:
        csrf = browser.post("/admin/login", json={"key": key}).json()["csrf"]
        assert browser.get("/api/v1/keys").status_code == 200  # the session administers
        error_of(browser.post("/api/v1/keys", json={"name": "no-csrf"}), 403)  # writes need the token
        r = httpx.post(server.url + "/api/v1/keys/laptop/revoke", headers=h)  # another admin revokes it
        assert r.status_code == 200 and r.json()["own_key"] is False
        error_of(browser.get("/admin/session"), 401)
        error_of(browser.post("/api/v1/keys", headers={"X-CSRF-Token": csrf}, json={"name": "late"}), 401)
    names = [k["name"] for k in httpx.get(server.url + "/api/v1/keys", headers=h).json()["keys"]]
    assert "no-csrf" not in names and "late" not in names


def test_an_admin_may_revoke_the_key_of_their_own_session(server: GatewayServer) -> None:
    key = server.admin_key("self-revoker")
    with httpx.Client(base_url=server.url, timeout=30) as browser:
        csrf = browser.post("/admin/login", json={"key": key}).json()["csrf"]
        r = browser.post("/api/v1/keys/self-revoker/revoke", headers={"X-CSRF-Token": csrf})
        assert r.status_code == 200, r.text
        assert r.json()["own_key"] is True and r.json()["admin_keys_left"] >= 1
        error_of(browser.get("/admin/session"), 401)
        error_of(browser.get("/api/v1/keys"), 401)


def test_export_is_the_log_as_the_cli_exports_it(server: GatewayServer) -> None:
    asked = [ask(server), ask(server, "What is the airspeed velocity of an unladen swallow?")]
    h = bearer(server.admin)
    r = httpx.get(server.url + "/api/v1/answers/export", headers=h)
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/x-ndjson")
    disposition = r.headers["content-disposition"]
    assert disposition.startswith('attachment; filename="manualqa-answers-') and disposition.endswith('.jsonl"')
    rows = [json.loads(line) for line in r.text.splitlines()]
    logged = httpx.get(server.url + "/api/v1/answers", headers=h, params={"limit": 500}).json()["answers"]
    assert [x["id"] for x in rows] == [x["id"] for x in reversed(logged)]  # every answer, oldest first
    for mine in asked:
        row = next(x for x in rows if x["id"] == mine["id"])
        assert (row["question"], row["outcome"], row["answer"]) == (mine["question"], mine["outcome"], mine["answer"])
    assert r.text == server.cli("log", "export").stdout  # byte for byte what `manualqa log export` writes

    r = httpx.get(server.url + "/api/v1/answers/export", headers=h,
                  params={"format": "csv", "since": "1h", "outcome": "not_found"})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/csv")
    assert "-not_found-since-1h-" in r.headers["content-disposition"]
    table = list(csv.DictReader(io.StringIO(r.text)))
    assert table and all(x["outcome"] == "not_found" for x in table)
    assert asked[1]["id"] in [x["id"] for x in table] and asked[0]["id"] not in [x["id"] for x in table]
    cli = server.cli("log", "export", "--format", "csv", "--since", "1h", "--outcome", "not_found").stdout
    assert list(csv.DictReader(io.StringIO(cli))) == table
    future = httpx.get(server.url + "/api/v1/answers/export", headers=h, params={"since": "2999-01-01"})
    assert future.status_code == 200 and future.text == ""


@pytest.mark.parametrize("params", [{"format": "xml"}, {"since": "last tuesday"}, {"since": "99999999999d"},
                                    {"outcome": "great"}, {"since": "x" * 65}])
def test_bad_export_filters_are_400_not_a_broken_download(server: GatewayServer, params: dict[str, str]) -> None:
    r = httpx.get(server.url + "/api/v1/answers/export", headers=bearer(server.admin), params=params)
    assert "content-disposition" not in r.headers
    assert error_of(r, 400)["code"] == "invalid_request"


def test_doctor_runs_the_gates_and_records_the_verdict(server: GatewayServer) -> None:
    h = bearer(server.admin)
    r = httpx.post(server.url + "/api/v1/deployment/doctor", headers=h, timeout=120)
    assert r.status_code == 200, r.text
    run = r.json()
    assert run["profile"] == "scripted-test" and [g["gate"] for g in run["gates"]] == [1, 2, 3, 4]
    assert run["gates"][0]["passed"] is True and run["warning"] is None  # the artifact loads and answers
    assert run["gates"][2]["passed"] is False and "no rollback" in run["gates"][2]["detail"]
    assert run["passed"] is False and run["failed_gates"] == [3] and run["report"]["gates"] == run["gates"]
    shown = httpx.get(server.url + "/api/v1/deployment", headers=h).json()["gates"]
    assert shown["checked_at"] == run["checked_at"] and shown["gates"] == run["gates"]
    saved = json.loads((server.data / "doctor" / "scripted-test.json").read_text())
    assert saved["checked_at"] == run["checked_at"]  # where `manualqa doctor` saves it
    assert httpx.post(server.url + "/api/v1/ask", headers=h, json={"question": QUESTION},
                      timeout=60).status_code == 200  # the serving chain is untouched


def test_answer_mode_switch_changes_the_next_answer(server: GatewayServer) -> None:
    h = bearer(server.admin)
    config = (server.workdir / "manualqa.toml").read_text()
    try:
        r = httpx.post(server.url + "/api/v1/deployment/answer-mode", headers=h, json={"mode": "extractive"})
        assert r.status_code == 200, r.text
        assert r.json()["answer_mode"] == "extractive" and r.json()["previous"] == "generate"
        assert r.json()["persisted"] is False and "manualqa.toml" in r.json()["note"]
        assert httpx.get(server.url + "/api/v1/deployment", headers=h).json()["answer_mode"] == "extractive"
        answer = ask(server)
        assert answer["mode"] == "extractive" and answer["draft"] == ""  # the model was not asked
        for bad in ({"mode": "fast"}, {"mode": None}, {}, {"mode": "generate", "persist": True}):
            r = httpx.post(server.url + "/api/v1/deployment/answer-mode", headers=h, json=bad)
            assert error_of(r, 400)["code"] == "invalid_request"
        assert httpx.get(server.url + "/api/v1/deployment", headers=h).json()["answer_mode"] == "extractive"
        assert (server.workdir / "manualqa.toml").read_text() == config  # the file is left alone
    finally:
        r = httpx.post(server.url + "/api/v1/deployment/answer-mode", headers=h, json={"mode": "generate"})
        assert r.status_code == 200 and r.json()["previous"] == "extractive"
    answer = ask(server)
    assert answer["mode"] == "generate" and answer["draft"] == SCRIPT  # the model wrote it


@pytest.mark.parametrize("path", ["/api/v1/keys", "/api/v1/deployment/answer-mode"])
def test_malformed_json_is_a_400(server: GatewayServer, path: str) -> None:
    for body in (b"{", b'{"name": ', b"[1, 2", b"nul", b"\xff\xfe{", b'{"name": 1, "mode": 2}', b"{" * 70 + b"}" * 70):
        r = httpx.post(server.url + path, content=body, timeout=30,
                       headers={**bearer(server.admin), "Content-Type": "application/json"})
        # the one error shape, with a code docs/api.md lists (Litestar's bad_request was not), never a 500
        assert error_of(r, 400)["code"] in ("invalid_json", "invalid_request"), r.text
    assert httpx.get(server.url + "/api/v1/deployment").json()["answer_mode"] == "generate"


def test_one_doctor_run_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A second run while one is loading the model is a 409, and the first still gives its verdict."""
    import threading

    from litestar.testing import TestClient

    from gateway.config import Settings
    from gateway.records.keys import KeyStore
    from gateway.web import routes_admin
    from gateway.web.app import create_app

    entered, release = threading.Event(), threading.Event()
    real = routes_admin.run_and_record

    def slow(*args: Any, **kwargs: Any) -> Any:
        entered.set()
        assert release.wait(30)
        return real(*args, **kwargs)

    monkeypatch.setattr(routes_admin, "run_and_record", slow)
    profile = tmp_path / "profile.toml"
    profile.write_text(SCRIPTED_PROFILE.format(script=SCRIPT, delay=0.0), encoding="utf-8")
    settings = Settings(data_dir=tmp_path / "data")
    settings.runtime.profile = str(profile)
    h = bearer(KeyStore(settings.db_path).create("ops", "admin"))
    with TestClient(create_app(settings, warm=False), timeout=60) as client:
        first: dict[str, Any] = {}
        worker = threading.Thread(target=lambda: first.update(r=client.post("/api/v1/deployment/doctor", headers=h)))
        worker.start()
        assert entered.wait(30)
        assert error_of(client.post("/api/v1/deployment/doctor", headers=h), 409)["code"] == "conflict"
        release.set()
        worker.join(60)
        assert first["r"].status_code == 200 and first["r"].json()["profile"] == "scripted-test"
        assert client.post("/api/v1/deployment/doctor", headers=h).status_code == 200  # free again
