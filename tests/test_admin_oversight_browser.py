"""The admin page's oversight sections (issue 48, item 9) in Debian's chromium, on a desktop and on a
390 px phone, against a real gateway with two index versions: the unanswered questions grouped by
meaning, the system status panel, and a question tried on the inactive version."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.browser import WAIT_MS
from tests.support.http import bearer
from tests.support.server import GatewayServer
from tests.support.versions import two_versions

pytestmark = pytest.mark.timeout(600)

SOURDOUGH = ("How do I bake a sourdough bread?", "What is a good recipe for a sourdough loaf?")
UNRELATED = "Who won the football world cup in 2014?"
VIEWPORTS = {"desktop": {"width": 1366, "height": 900}, "phone": {"width": 390, "height": 844}}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Iterator[GatewayServer]:
    data, old, new = two_versions(tmp_path_factory.mktemp("two-versions-browser") / "data", embedder)
    srv = GatewayServer(data, tmp_path_factory.mktemp("oversight-browser"),
                        config='[server]\nallow_anonymous_read = false\nrate_limit_per_minute = 600\n'
                               '[answer]\nmode = "extractive"\n')
    srv.start()
    srv.admin = srv.admin_key("ops")
    srv.old, srv.new = old, new
    tech = srv.cli("keys", "create", "tech", "--role", "reader").stdout.strip()
    for q in (*SOURDOUGH, UNRELATED):
        r = httpx.post(srv.url + "/api/v1/ask", headers={**bearer(tech), "X-Manualqa-Client": "web"},
                       json={"question": q}, timeout=120)
        assert r.status_code == 200 and r.json()["outcome"] == "not_found", r.text
    yield srv
    srv.stop()


@pytest.fixture(params=list(VIEWPORTS))
def page(request: pytest.FixtureRequest, browser: Any) -> Iterator[Any]:
    phone = request.param == "phone"
    context = browser.new_context(viewport=VIEWPORTS[request.param], is_mobile=phone, has_touch=phone)
    pg = context.new_page()
    pg.set_default_timeout(WAIT_MS)
    pg.is_phone = phone
    yield pg
    context.close()


def login(pg: Any, server: GatewayServer) -> None:
    pg.goto(server.url + "/admin")
    pg.fill("#admin-key", server.admin)
    pg.click("#login")
    pg.wait_for_selector("#admin:not([hidden])")


def fits(pg: Any) -> None:
    widths = pg.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert widths[0] <= widths[1], f"the page scrolls sideways: {widths}"


def test_unanswered_status_and_a_trial_on_the_admin_page(page: Any, server: GatewayServer) -> None:
    login(page, server)

    # what went unanswered: two wordings of one need in one group of 2, the unrelated question apart
    page.click("#unanswered-box > summary")
    page.wait_for_selector("#unanswered-groups .unanswered-group")
    groups = page.locator("#unanswered-groups .unanswered-group")
    assert groups.count() == 2
    top = groups.nth(0)
    assert top.get_attribute("data-count") == "2" and SOURDOUGH[1] in top.locator("h3").inner_text()
    assert UNRELATED in groups.nth(1).locator("h3").inner_text()
    top.locator("details.group-questions > summary").click()
    assert SOURDOUGH[0] in top.locator("details.group-questions").inner_text()
    top.locator("details.group-passages > summary").click()
    link = top.locator("details.group-passages a").first
    assert "/file#page=" in link.get_attribute("href")
    assert page.locator("#unanswered-count").inner_text().startswith("3 questions in 2 groups")
    week_options = page.locator("#unanswered-week option").all_inner_texts()
    assert len(week_options) == 2 and "(3)" in week_options[1]  # all weeks, and this week with its 3
    fits(page)

    # the system's state
    page.click("#status-box > summary")
    page.wait_for_selector("#status-table tr[data-key='disk']")
    status = httpx.get(server.url + "/api/v1/admin/status", headers=bearer(server.admin)).json()
    assert f"pid {status['pid']}" in page.locator("#status-table tr[data-key='process']").inner_text()
    assert "free" in page.locator("#status-table tr[data-key='disk']").inner_text()
    assert server.new in page.locator("#status-table tr[data-key='index']").inner_text()
    for key in ("memory", "queue", "runtime", "answer_log"):
        assert page.locator(f"#status-table tr[data-key='{key}'] td").inner_text().strip()
    fits(page)

    # a question tried on the inactive version: its answer, marked as a trial; nothing else changes
    before = httpx.get(server.url + "/api/v1/answers", headers=bearer(server.admin), params={"limit": 500}).json()
    page.click("#trial-box > summary")
    page.wait_for_selector(f"#trial-version option[value='{server.old}']", state="attached")
    assert page.locator("#trial-version").input_value() == server.old  # the inactive one is offered first
    page.fill("#trial-question", "What baud rate does the piston board debug console use?")
    page.click("#trial-ask")
    page.wait_for_selector("#trial-out .trial-badge")
    out = page.locator("#trial-out").inner_text()
    assert server.old in out and server.new in out and "not logged" in out
    assert "115200" in out and "Voron" not in out
    after = httpx.get(server.url + "/api/v1/answers", headers=bearer(server.admin), params={"limit": 500}).json()
    assert after == before
    assert httpx.get(server.url + "/api/v1/index/versions", headers=bearer(server.admin)).json()["active"] == server.new
    fits(page)
    if page.is_phone:  # the new controls are tap targets on a phone
        small = page.evaluate("""() => [...document.querySelectorAll(
              '#unanswered-box a, #unanswered-box button, #unanswered-box summary, #unanswered-box select,'
              + ' #status-box button, #trial-box button, #trial-box select, #trial-box input, #trial-out a')]
            .filter(e => e.offsetParent !== null)
            .map(e => [e.id || e.textContent.trim().slice(0, 30), Math.round(e.getBoundingClientRect().height)])
            .filter(([, h]) => h < 44)""")
        assert small == [], f"tap targets under 44 px: {small}"


def test_a_trial_of_an_unknown_version_says_so(browser: Any, server: GatewayServer) -> None:
    context = browser.new_context(viewport=VIEWPORTS["desktop"])
    try:
        page = context.new_page()
        page.set_default_timeout(WAIT_MS)
        trial_of_a_gone_version(page, server)
    finally:
        context.close()


def trial_of_a_gone_version(page: Any, server: GatewayServer) -> None:
    """A version removed since the list was drawn (gc elsewhere): the API's 404 message shows."""
    login(page, server)
    page.click("#trial-box > summary")
    page.wait_for_selector(f"#trial-version option[value='{server.old}']", state="attached")
    page.evaluate("v => { const o = document.createElement('option'); o.value = v; o.textContent = v;"
                  " document.getElementById('trial-version').append(o); }", "v-gone")
    page.select_option("#trial-version", "v-gone")
    page.fill("#trial-question", "anything")
    page.click("#trial-ask")
    page.wait_for_function("document.getElementById('trial-msg').textContent.includes('no index version')")
    assert page.locator("#trial-out").is_hidden()
