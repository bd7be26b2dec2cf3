"""answer.mode = "auto" seen as a technician and an admin see it, in a real browser (issue 25, item 4).

A real server on the sample index with a site profile whose model is the scripted test double. Before
the profile is qualified, the page's "Gateway default" is the evidence-only mode, an answer is
extractive (no green badge) and the admin page says why; after `manualqa doctor` runs gate 4 on it,
the running server (no restart) generates and says which verdict let it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.browser import WAIT_MS
from tests.support.http import bearer
from tests.support.server import GatewayServer
from tests.test_answers_gate import QUESTIONS, RIGHT, site_profile
from tests.test_browser import shot

pytestmark = pytest.mark.timeout(600)
QUESTION = QUESTIONS[0]["question"]


@pytest.fixture(scope="module")
def server(sample_data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayServer]:
    work = tmp_path_factory.mktemp("auto-mode")
    profile = site_profile(work, RIGHT, name="site.toml")
    srv = GatewayServer(sample_data_dir, work / "srv", config=f'[runtime]\nprofile = "{profile}"\n'
                        '[answer]\nmode = "auto"\n[server]\nrate_limit_per_minute = 600\n')
    srv.profile_path = profile
    srv.start()
    srv.ops = srv.admin_key("ops")
    yield srv
    srv.stop()


def _ask(pg: Any, url: str) -> str:
    pg.goto(url + "/")
    pg.fill("#question", QUESTION)
    pg.click("#ask")
    pg.wait_for_selector("#outcome.answered, #outcome.evidence_only, #outcome.not_found, #outcome.error")
    return str(pg.get_attribute("#outcome", "class"))


def _admin(pg: Any, srv: GatewayServer) -> str:
    pg.goto(srv.url + "/admin")
    pg.wait_for_selector("#admin:not([hidden]), #login-box:not([hidden])")
    if pg.locator("#login-box").is_visible():  # the second visit keeps the session
        pg.fill("#admin-key", srv.ops)
        pg.click("#login")
    pg.wait_for_selector("#deploy-summary tr")
    return str(pg.inner_text("#deploy-summary"))


def test_the_default_mode_follows_gate_4_without_a_restart(browser: Any, server: GatewayServer) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    pg.set_default_timeout(WAIT_MS)
    try:
        # Not qualified: evidence only, and both pages say so.
        pg.goto(server.url + "/")
        pg.wait_for_function("document.querySelector('#mode option[value=\"\"]').textContent.includes('Quick')")
        assert "evidence_only" in _ask(pg, server.url)
        assert pg.locator("#outcome.answered").count() == 0  # no green badge the model has not earned
        shot(pg, "technician-auto-unqualified.png")
        summary = _admin(pg, server)
        assert "extractive: profile 'scripted-test' has not been qualified" in summary
        assert "manualqa doctor --answers" in summary
        assert pg.input_value("#answer-mode") == "auto"
        pg.locator("#gates").scroll_into_view_if_needed()
        shot(pg, "admin-mode-unqualified.png")

        # Gate 4 on the command line, as a site would: the running server follows at the next question.
        doctor = server.cli("doctor", "--profile", str(server.profile_path), check=False)
        assert doctor.returncode == 0, doctor.stdout + doctor.stderr
        assert re.search(r"^gate 4\s+PASS", doctor.stdout, re.M) and "qualified for generate mode" in doctor.stdout
        health = httpx.get(server.url + "/api/v1/health", timeout=10).json()
        assert health["answer_mode"] == "generate" and "passed gate 4" in health["answer_mode_reason"]
        pg.goto(server.url + "/")
        pg.wait_for_function("document.querySelector('#mode option[value=\"\"]').textContent.includes('Explain')")
        assert "answered" in _ask(pg, server.url)
        summary = _admin(pg, server)
        assert "generate: profile 'scripted-test' passed gate 4" in summary
        assert "Gate 4 (answers)" in summary and "pass:" in summary
        pg.locator("#gates").scroll_into_view_if_needed()
        shot(pg, "admin-mode-qualified.png")

        # An admin override still decides, for the running server only.
        r = httpx.post(server.url + "/api/v1/deployment/answer-mode", headers=bearer(server.ops),
                       json={"mode": "extractive"}, timeout=10)
        assert r.status_code in (200, 201), r.text
        deployment = httpx.get(server.url + "/api/v1/deployment", headers=bearer(server.ops), timeout=10).json()
        assert deployment["answer_mode"] == "extractive" and deployment["answer_mode_configured"] == "extractive"
        assert deployment["qualification"]["status"] == "pass"  # the verdict is kept, only not followed
        r = httpx.post(server.url + "/api/v1/deployment/answer-mode", headers=bearer(server.ops),
                       json={"mode": "auto"}, timeout=10)
        assert r.json()["answer_mode"] == "auto" and r.json()["previous"] == "extractive"
        health = httpx.get(server.url + "/api/v1/health", timeout=10).json()
        assert health["answer_mode"] == "generate"
    finally:
        context.close()
