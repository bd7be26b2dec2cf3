"""What an administrator sees of the gateway (issue 48, item 9) on a real server with the sample manuals
in two index versions, asked real questions: the unanswered view (not-found, not-helpful and re-asked
questions grouped by meaning, per manual and week), the system status, and a question tried on the
inactive version (from its manuals only, not logged, the active version unchanged)."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.http import bearer, error_of
from tests.support.server import GatewayServer
from tests.support.versions import two_versions

pytestmark = pytest.mark.timeout(600)

SOURDOUGH = ("How do I bake a sourdough bread?", "What is a good recipe for a sourdough loaf?")
UNRELATED = "Who won the football world cup in 2014?"
BAUD = ("What baud rate does the piston board debug console use?",
        "Which baud rate is used by the debug console of the piston board?")


@pytest.fixture(scope="module")
def versions(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> tuple[Path, str, str]:
    return two_versions(tmp_path_factory.mktemp("two-versions") / "data", embedder)


@pytest.fixture(scope="module")
def server(versions: tuple[Path, str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayServer]:
    srv = GatewayServer(versions[0], tmp_path_factory.mktemp("oversight"),
                        config='[server]\nallow_anonymous_read = false\nrate_limit_per_minute = 600\n'
                               '[answer]\nmode = "extractive"\n')
    srv.start()
    srv.admin = srv.admin_key("ops")
    srv.old, srv.new = versions[1], versions[2]
    yield srv
    srv.stop()


def reader(srv: GatewayServer, name: str) -> str:
    return srv.cli("keys", "create", name, "--role", "reader").stdout.strip()


def ask(srv: GatewayServer, key: str, question: str) -> dict[str, Any]:
    r = httpx.post(srv.url + "/api/v1/ask", headers={**bearer(key), "X-Manualqa-Client": "web"},
                   json={"question": question}, timeout=120)
    assert r.status_code == 200, r.text
    return r.json()


def unanswered(srv: GatewayServer, **params: str) -> dict[str, Any]:
    r = httpx.get(srv.url + "/api/v1/admin/unanswered", headers=bearer(srv.admin), params=params, timeout=120)
    assert r.status_code == 200, r.text
    return r.json()


def group_of(view: dict[str, Any], answer_id: str) -> dict[str, Any]:
    found = [g for g in view["groups"] if answer_id in {q["id"] for q in g["questions"]}]
    assert len(found) == 1, (answer_id, view["groups"])
    return found[0]


def test_not_found_questions_are_grouped_by_meaning_per_manual_and_week(server: GatewayServer) -> None:
    key = reader(server, "tech-a")
    a, b = (ask(server, key, q) for q in SOURDOUGH)
    other = ask(server, key, UNRELATED)
    assert [x["outcome"] for x in (a, b, other)] == ["not_found"] * 3
    view = unanswered(server)
    assert view["grouped_by"] == "embedding"
    together = group_of(view, a["id"])
    assert group_of(view, b["id"]) is together and together["count"] == 2  # two wordings, one group
    assert group_of(view, other["id"]) is not together  # an unrelated question apart
    assert together["reasons"]["not_found"] == 2 and together["question"] == SOURDOUGH[1]  # the latest wording
    # the closest passages the not-found answers listed, their text read back from the version that answered
    assert together["passages"] and all(p["page"] and p["pdf_url"] and p["text"] for p in together["passages"])
    week = "{}-W{:02d}".format(*dt.datetime.now(dt.timezone.utc).isocalendar()[:2])
    assert together["weeks"] == [week] and {w["week"] for w in view["by_week"]} == {week}
    assert sum(m["count"] for m in view["by_manual"]) == view["questions"] >= 3
    manual = together["manuals"][0]["sha256"]
    assert manual in {m["sha256"] for m in view["by_manual"]}
    narrowed = unanswered(server, manual=manual[:12])  # per manual: only the groups of that manual
    assert all(manual in {m["sha256"] for m in g["manuals"]} for g in narrowed["groups"])
    assert unanswered(server, week="2001-W01")["groups"] == []
    assert unanswered(server, client="replay")["questions"] == 0  # the admin's own runs are not technicians'


def test_a_question_asked_again_or_voted_not_helpful_counts(server: GatewayServer) -> None:
    key = reader(server, "tech-b")
    first, again = (ask(server, key, q) for q in BAUD)
    assert first["outcome"] != "not_found" and again["outcome"] != "not_found"
    voted = ask(server, reader(server, "tech-c"), "How do I level the bed?")
    assert voted["outcome"] == "evidence_only"
    r = httpx.post(f"{server.url}/api/v1/answers/{voted['id']}/feedback", headers=bearer(server.admin),
                   json={"thumbs": -1}, timeout=30)
    assert r.status_code == 201, r.text
    view = unanswered(server)
    row = next(q for q in group_of(view, first["id"])["questions"] if q["id"] == first["id"])
    assert row["reasons"] == ["asked_again"]
    assert again["id"] not in {q["id"] for g in view["groups"] for q in g["questions"]}  # its answer served
    assert group_of(view, voted["id"])["reasons"] == {"not_helpful": 1}


def test_unanswered_is_admin_only_and_refuses_bad_filters(server: GatewayServer) -> None:
    url = server.url + "/api/v1/admin/unanswered"
    error_of(httpx.get(url, headers=bearer(reader(server, "tech-d"))), 403)
    error_of(httpx.get(url), 401)
    for params in ({"week": "2026-49"}, {"week": "2026-W77"}, {"client": "nobody"}, {"since": "yesterday"},
                   {"limit": "0"}):
        error_of(httpx.get(url, headers=bearer(server.admin), params=params), 400)


def test_status_has_disk_memory_queue_runtime_index_and_log(server: GatewayServer) -> None:
    r = httpx.get(server.url + "/api/v1/admin/status", headers=bearer(server.admin), timeout=60)
    assert r.status_code == 200, r.text
    s = r.json()
    assert s["pid"] == server.proc.pid and s["ready"] is True and s["uptime_s"] > 0
    assert 0 < s["disk"]["free_bytes"] <= s["disk"]["total_bytes"]
    assert Path(s["disk"]["path"]) == server.data.resolve()
    assert s["memory"]["rss_bytes"] > 10 * 2**20 and s["memory"]["peak_rss_bytes"] >= s["memory"]["rss_bytes"]
    assert s["queue"] == {"waiting": 0, "running": 0, "capacity": s["queue"]["capacity"]} and s["queue"]["capacity"] > 0
    assert s["runtime"]["state"] in ("unloaded", "loading", "ready", "restarting", "failed")
    refusal = s["index"]["export_refusal"]  # this gateway has no signing key: an export would be refused
    assert s["index"] == {"active": server.new, "versions": 2, "export_refusal": refusal}
    assert refusal.startswith("no signing key on this gateway"), refusal
    listed = httpx.get(server.url + "/api/v1/answers", headers=bearer(server.admin), params={"limit": 500}).json()
    assert s["answer_log"]["rows"] == len(listed["answers"]) and s["answer_log"]["db_bytes"] > 0
    assert sum(s["answers"].values()) == s["answer_log"]["rows"]  # every answer of this process, per outcome
    assert s["answer_mode"] == "extractive"
    error_of(httpx.get(server.url + "/api/v1/admin/status"), 401)
    assert os.getpid() != s["pid"]


def test_a_trial_answers_from_the_inactive_version_and_changes_nothing(server: GatewayServer) -> None:
    admin = bearer(server.admin)
    active = ask(server, server.admin, "How do I level the bed?")  # the active version finds the Voron guide
    voron = {c["manual_sha256"] for c in active["citations"]}
    assert any(c["manual"] == "voron0_setup_guide.pdf" for c in active["citations"])
    before = httpx.get(server.url + "/api/v1/answers", headers=admin, params={"limit": 500}).json()["answers"]

    r = httpx.post(server.url + "/api/v1/admin/try", headers=admin, timeout=120,
                   json={"question": BAUD[0], "version": server.old})
    assert r.status_code == 200, r.text
    trial = r.json()
    assert trial["trial"] is True and trial["logged"] is False
    assert trial["version"] == server.old == trial["answer"]["index_version"] and trial["active"] == server.new
    cited = trial["answer"]["citations"]
    assert cited and {c["manual"] for c in cited} == {"noaa_lcp_pistonboard_user_manual.pdf"}
    assert any("115200" in c["passage"] for c in cited)

    bed = httpx.post(server.url + "/api/v1/admin/try", headers=admin, timeout=120,
                     json={"question": "How do I level the bed?", "version": server.old}).json()["answer"]
    shown = {p["manual_sha256"] for p in bed["passages"]} | {c["manual_sha256"] for c in bed["citations"]}
    assert shown and not shown & voron  # the old version has no Voron guide to find

    after = httpx.get(server.url + "/api/v1/answers", headers=admin, params={"limit": 500}).json()["answers"]
    assert after == before  # no row for a trial: the technicians' log is unchanged
    error_of(httpx.get(f"{server.url}/api/v1/answers/{trial['answer']['id']}", headers=admin), 404)
    assert httpx.get(server.url + "/api/v1/index/versions", headers=admin).json()["active"] == server.new


def test_a_trial_refuses_unknown_versions_bad_input_and_non_admins(server: GatewayServer) -> None:
    url, admin = server.url + "/api/v1/admin/try", bearer(server.admin)
    assert error_of(httpx.post(url, headers=admin, json={"question": "q", "version": "v-nope"}), 404)["code"] \
        == "not_found"
    for body in ({"question": "q"}, {"version": server.old}, {"question": " ", "version": server.old},
                 {"question": "q", "version": server.old, "mode": "generate"},
                 {"question": "x" * 2001, "version": server.old},
                 {"question": "q", "version": server.old, "manuals": ["no-such-manual.pdf"]}):
        error_of(httpx.post(url, headers=admin, json=body), 400)
    error_of(httpx.post(url, headers=bearer(reader(server, "tech-e")), json={"question": "q", "version": server.old}),
             403)
    error_of(httpx.post(url, json={"question": "q", "version": server.old}), 401)
