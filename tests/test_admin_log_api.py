"""The answer log's pages and filters, the audit trail and the log's retention, over HTTP against a real
gateway (issue 48, item 9). Rows come from real asks and, for chosen clients, times and manuals, from the
records layer writing into the server's own gateway.db."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import httpx
import pytest

from gateway.records import db as gdb
from gateway.records.answers import AnswerLog
from tests.support.http import bearer, error_of
from tests.support.server import SCRIPTED_PROFILE, GatewayServer

QUESTION = "What input voltage range does the piston board accept?"
pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def server(sample_data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayServer]:
    srv = GatewayServer(sample_data_dir, tmp_path_factory.mktemp("admin-log-api"),
                        config="[server]\nallow_anonymous_read = false\nrate_limit_per_minute = 600\n",
                        profile=SCRIPTED_PROFILE.format(script="Six to 36 volts [1].", delay=0.0))
    srv.start()
    srv.ops = srv.admin_key("ops")
    srv.reader = srv.cli("keys", "create", "kiosk", "--role", "reader").stdout.strip()
    yield srv
    srv.stop()


def row(question: str, when: datetime, client: str = "web", outcome: str = "answered",
        manual_sha: str = "") -> dict[str, Any]:
    cites = [{"n": 1, "manual": "m.pdf", "manual_sha256": manual_sha, "page": 3, "passage": "text"}]
    return {"id": gdb.new_id(), "time": gdb.iso_utc(when), "question": question, "scope": [], "answer": "a [1]",
            "outcome": outcome, "mode": "extractive", "flags": [], "citations": cites if manual_sha else [],
            "passages": [], "index_version": "v1", "chain_id": None, "profile": "p", "generation_config": {},
            "timings": {}, "error": None, "client": client, "key_name": None}


def write(server: GatewayServer, rows: list[dict[str, Any]]) -> None:
    log = AnswerLog(server.data / "gateway.db")
    try:
        for r in rows:
            log.record(r, durable=True)
    finally:
        log.close()


def answers(server: GatewayServer, **params: Any) -> dict[str, Any]:
    r = httpx.get(server.url + "/api/v1/answers", params=params, headers=bearer(server.ops), timeout=30)
    assert r.status_code == 200, r.text
    return dict(r.json())


def test_pages_with_a_total_and_filters_by_client_outcome_manual_and_time(server: GatewayServer) -> None:
    asked = httpx.post(server.url + "/api/v1/ask", headers=bearer(server.ops), json={"question": QUESTION},
                       timeout=120).json()
    manual = asked["citations"][0]["manual_sha256"]
    base = datetime(2026, 3, 2, 8, 0, tzinfo=timezone.utc)
    write(server, [row(f"replayed {i}", base + timedelta(minutes=i), client="replay") for i in range(7)]
          + [row("tech not found", base + timedelta(days=1), client="web", outcome="not_found"),
             row("tech about the manual", base + timedelta(days=2), client="web", manual_sha=manual)])

    everything = answers(server, limit=500)
    total = everything["total"]
    assert total == len(everything["answers"]) >= 10
    ids = [r["id"] for r in everything["answers"]]
    paged: list[str] = []
    for offset in range(0, total, 4):  # pages of 4, newest first, none lost or repeated
        page = answers(server, limit=4, offset=offset)
        assert page["total"] == total and page["limit"] == 4 and page["offset"] == offset
        paged += [r["id"] for r in page["answers"]]
    assert paged == ids and ids == sorted(ids, reverse=True)

    replay = answers(server, client="replay", limit=3)
    assert replay["total"] == 7 and [r["question"] for r in replay["answers"]] == ["replayed 6", "replayed 5",
                                                                                   "replayed 4"]
    people = answers(server, client="web,api", limit=500)
    assert {r["client"] for r in people["answers"]} == {"web", "api"} and people["total"] == total - 7
    assert asked["id"] in [r["id"] for r in people["answers"]]
    assert [r["question"] for r in answers(server, client="web", outcome="not_found")["answers"]] == ["tech not found"]
    by_manual = answers(server, manual=manual[:12], limit=500)["answers"]
    assert {"tech about the manual", QUESTION} <= {r["question"] for r in by_manual}
    assert not {"tech not found", "replayed 0"} & {r["question"] for r in by_manual}
    window = answers(server, since="2026-03-02T08:02:00Z", until="2026-03-02T08:05:00Z")
    assert [r["question"] for r in window["answers"]] == ["replayed 4", "replayed 3", "replayed 2"]
    assert window["total"] == 3
    # the download follows the same filters
    export = httpx.get(server.url + "/api/v1/answers/export", headers=bearer(server.ops), timeout=30,
                       params={"client": "replay", "until": "2026-03-02T08:02:00Z"})
    assert export.status_code == 200 and export.text.count("\n") == 2 and "replayed 1" in export.text


@pytest.mark.parametrize("params, word", [
    ({"client": "technicians"}, "client"), ({"outcome": "maybe"}, "outcome"), ({"since": "last week"}, "since"),
    ({"until": "soon"}, "until"), ({"since": "2026-03-02", "until": "2026-03-01"}, "after"),
    ({"manual": "not-a-sha"}, "manual"), ({"limit": 0}, "limit"), ({"offset": -1}, "offset")])
def test_a_bad_filter_is_a_400_that_names_it_and_loses_nothing(server: GatewayServer, params: dict[str, Any],
                                                              word: str) -> None:
    before = answers(server)["total"]
    r = httpx.get(server.url + "/api/v1/answers", params=params, headers=bearer(server.ops), timeout=30)
    error = error_of(r, 400)
    assert word in (error["message"] + str(error.get("details", ""))), error
    assert answers(server)["total"] == before  # the log is intact and the server still answers


def audit(server: GatewayServer, **params: Any) -> list[dict[str, Any]]:
    r = httpx.get(server.url + "/api/v1/audit", params=params, headers=bearer(server.ops), timeout=30)
    assert r.status_code == 200, r.text
    entries: list[dict[str, Any]] = r.json()["entries"]
    return entries


def test_admin_actions_are_audited_with_who_what_and_whether_it_worked(server: GatewayServer) -> None:
    ok = httpx.post(server.url + "/api/v1/deployment/answer-mode", headers=bearer(server.ops),
                    json={"mode": "extractive"}, timeout=30)
    assert ok.status_code == 200
    refused = httpx.post(server.url + "/api/v1/deployment/answer-mode", headers=bearer(server.reader),
                         json={"mode": "generate"}, timeout=30)
    assert refused.status_code == 403
    missing = httpx.post(server.url + "/api/v1/index/versions/no-such-version/activate",
                         headers=bearer(server.ops), timeout=30)
    assert missing.status_code == 404

    mode = audit(server, action="answer_mode.set")
    assert [(e["actor"], e["via"], e["target"], e["result"], e["status"]) for e in mode[:2]] == [
        ("kiosk", "key", "generate", "refused", 403), ("ops", "key", "extractive", "ok", 200)]
    assert mode[1]["detail"].startswith("was ") and "admin needed" in mode[0]["detail"]
    activate = audit(server, action="index.activate")[0]
    assert (activate["target"], activate["result"], activate["status"]) == ("no-such-version", "failed", 404)
    assert datetime.fromisoformat(activate["time"].replace("Z", "+00:00")).tzinfo is not None  # UTC ISO-8601

    # the admin page's way: a cookie session; a write without its CSRF token is refused, and recorded
    with httpx.Client(base_url=server.url, timeout=30) as browser:
        assert browser.post("/admin/login", json={"key": "mqa_wrong"}).status_code == 401
        session = browser.post("/admin/login", json={"key": server.ops}).json()
        assert browser.put("/api/v1/answers/retention", json={"days": 400}).status_code == 403
        assert browser.put("/api/v1/answers/retention", json={"days": 400},
                           headers={"X-CSRF-Token": session["csrf"]}).status_code == 200
        assert browser.put("/api/v1/answers/retention", json={"days": 0},
                           headers={"X-CSRF-Token": session["csrf"]}).status_code == 200
    retention = audit(server, action="retention.set")
    assert [(e["via"], e["result"], e["target"]) for e in retention[:3]] == [
        ("session", "ok", "0"), ("session", "ok", "400"), ("session", "refused", "400")]
    assert retention[0]["actor"] == "ops" and retention[0]["detail"] == "was 400"
    logins = audit(server, action="login")
    assert [(e["actor"], e["result"]) for e in logins[:2]] == [("ops", "ok"), ("", "refused")]
    assert all(server.ops not in str(e) and "mqa_wrong" not in str(e) for e in audit(server, limit=500))

    page = httpx.get(server.url + "/api/v1/audit", params={"limit": 2}, headers=bearer(server.ops), timeout=30).json()
    assert page["total"] >= 8 and len(page["entries"]) == 2
    error_of(httpx.get(server.url + "/api/v1/audit", headers=bearer(server.reader), timeout=30), 403)
    error_of(httpx.get(server.url + "/api/v1/audit", params={"result": "maybe"}, headers=bearer(server.ops),
                       timeout=30), 400)


def test_a_retention_change_deletes_only_older_answers_and_their_feedback(server: GatewayServer) -> None:
    now = datetime.now(timezone.utc)
    old, recent = row("kept too long", now - timedelta(days=45)), row("still wanted", now - timedelta(days=5))
    write(server, [old, recent])
    for r in (old, recent):
        assert httpx.post(f"{server.url}/api/v1/answers/{r['id']}/feedback", headers=bearer(server.ops),
                          json={"thumbs": -1, "comment": "x"}, timeout=30).status_code == 201
    changed = httpx.put(server.url + "/api/v1/answers/retention", headers=bearer(server.ops), json={"days": 30},
                        timeout=60).json()
    assert changed["days"] == 30 and changed["configured"] == 0 and changed["deleted_last_run"] >= 1
    assert "next start" in changed["note"]
    gone = httpx.get(f"{server.url}/api/v1/answers/{old['id']}", headers=bearer(server.ops), timeout=30)
    assert gone.status_code == 404
    kept = httpx.get(f"{server.url}/api/v1/answers/{recent['id']}", headers=bearer(server.ops), timeout=30).json()
    assert kept["question"] == "still wanted" and len(kept["feedback"]) == 1
    shown = httpx.get(server.url + "/api/v1/answers/retention", headers=bearer(server.ops), timeout=30).json()
    assert shown["days"] == 30
    error_of(httpx.put(server.url + "/api/v1/answers/retention", headers=bearer(server.ops), json={"days": -1},
                       timeout=30), 400)
    httpx.put(server.url + "/api/v1/answers/retention", headers=bearer(server.ops), json={"days": 0}, timeout=30)


def test_every_named_action_is_a_route_of_the_app(tmp_path: Path) -> None:
    """ACTIONS is keyed by method and path: a typo there, or a route moved, would record under the generic
    name or not at all. Every key names a real route, and every admin-guarded write is recorded."""
    from gateway.config import Settings
    from gateway.web.app import create_app
    from gateway.web.audit import ACTIONS, action_of
    from gateway.web.security import admin_guard

    app = create_app(Settings(data_dir=tmp_path / "data"), warm=False)
    served: set[tuple[str, str]] = set()
    for route in app.routes:
        for handler in getattr(route, "route_handlers", []):
            for method in getattr(handler, "http_methods", ()):
                served.add((method, re.sub(r"\{(\w+):[^}]*\}", r"{\1}", route.path)))
                scope = {"method": method, "path_template": route.path, "route_handler": handler}
                if method not in ("GET", "HEAD", "OPTIONS") and admin_guard in handler.resolve_guards():
                    assert action_of(scope) is not None, (method, route.path)
    assert set(ACTIONS) <= served, set(ACTIONS) - served
