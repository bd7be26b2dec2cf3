"""The admin page's tools that replace the command line (issue 10), in a real browser (Debian's
chromium driven by Playwright) against a real gateway: create an API key and see it once, copy it,
revoke it after confirming (and one's own, which logs out), run the doctor and the profile switch,
switch the answer mode and see the next answer follow it, download the answer log."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.browser import WAIT_MS, wait_for_dialog
from tests.support.http import bearer
from tests.support.server import SCRIPTED_PROFILE, GatewayServer

SCRIPT = "Six to 36 volts [1]."
QUESTION = "What input voltage range does the piston board accept?"

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def server(sample_data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayServer]:
    srv = GatewayServer(sample_data_dir, tmp_path_factory.mktemp("admin-browser"),
                        config="[server]\nallow_anonymous_read = false\nrate_limit_per_minute = 600\n",
                        profile=SCRIPTED_PROFILE.format(script=SCRIPT, delay=0.0))
    srv.start()
    srv.ops = srv.admin_key("ops")  # for the test's own API calls, never revoked here
    yield srv
    srv.stop()


@pytest.fixture()
def page(browser: Any, server: GatewayServer) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.url)
    pg = context.new_page()
    pg.set_default_timeout(WAIT_MS)
    yield pg
    context.close()



def login(pg: Any, server: GatewayServer, key: str) -> None:
    pg.goto(server.url + "/admin")
    pg.fill("#admin-key", key)
    pg.click("#login")
    pg.wait_for_selector("#admin:not([hidden])")
    pg.wait_for_function("document.getElementById('keys-count').textContent.includes('active')")


def test_create_a_key_see_it_once_copy_it_and_revoke_it(page: Any, server: GatewayServer) -> None:
    mine = server.admin_key("browser-admin")
    login(page, server, mine)
    assert page.locator("#key-form").is_hidden()  # a rare task: the section opens on request
    page.click("#keys-box summary")
    assert "(this session)" in page.locator("#keys tbody tr", has_text="browser-admin").inner_text()

    page.fill("#key-name", "kiosk-9")
    page.select_option("#key-role", "reader")
    page.click("#create-key")
    page.wait_for_selector("#new-key:not([hidden])")
    assert "will not be shown again" in page.inner_text("#new-key")
    key = page.input_value("#new-key-value")
    assert key.startswith("mqa_") and len(key) > 40
    assert httpx.get(server.url + "/api/v1/manuals", headers=bearer(key)).status_code == 200  # a working key
    row = page.locator("#keys tbody tr", has_text="kiosk-9")
    row.wait_for()
    assert "reader" in row.inner_text() and "active" in row.inner_text() and key not in page.inner_text("#keys")
    page.click("#copy-key")
    page.wait_for_function("document.getElementById('copy-msg').textContent.startsWith('Copied')")
    assert page.evaluate("navigator.clipboard.readText()") == key
    page.click("#hide-key")
    assert page.locator("#new-key").is_hidden() and page.input_value("#new-key-value") == ""
    page.reload()
    page.wait_for_function("document.getElementById('keys-count').textContent.includes('active')")
    page.click("#keys-box summary")
    assert key not in page.content()  # shown once: not after a reload, nowhere on the page

    dialogs: list[str] = []
    page.once("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.locator("#keys tbody tr", has_text="kiosk-9").locator("button", has_text="Revoke").click()
    wait_for_dialog(page, dialogs)
    page.wait_for_timeout(300)  # time for a revoke that wrongly went ahead to show
    assert dialogs and '"kiosk-9"' in dialogs[0] and "your own session" not in dialogs[0]
    assert httpx.get(server.url + "/api/v1/manuals", headers=bearer(key)).status_code == 200  # dismissed: kept
    page.once("dialog", lambda d: (dialogs.append(d.message), d.accept()))
    page.locator("#keys tbody tr", has_text="kiosk-9").locator("button", has_text="Revoke").click()
    page.wait_for_function("document.getElementById('key-msg').textContent.includes('kiosk-9')")
    page.locator("#keys tbody tr.revoked", has_text="kiosk-9").wait_for()  # listed as revoked, no button
    assert page.locator("#keys tbody tr", has_text="kiosk-9").locator("button").count() == 0
    assert httpx.get(server.url + "/api/v1/manuals", headers=bearer(key)).status_code == 401

    # One's own key: allowed, but the confirmation says so, and the page logs out at once.
    page.once("dialog", lambda d: (dialogs.append(d.message), d.accept()))
    page.locator("#keys tbody tr", has_text="browser-admin").locator("button", has_text="Revoke").click()
    page.wait_for_selector("#login-box:not([hidden])")
    assert "your own session" in dialogs[-1] and "logged out" in dialogs[-1]
    assert "logged out" in page.inner_text("#login-msg") and page.locator("#admin").is_hidden()
    assert httpx.get(server.url + "/api/v1/manuals", headers=bearer(mine)).status_code == 401
    page.reload()
    page.wait_for_selector("#login-box:not([hidden])")  # the session is gone, not just hidden
    assert page.locator("#admin").is_hidden()


def test_deployment_doctor_profile_switch_and_answer_mode(page: Any, server: GatewayServer) -> None:
    login(page, server, server.admin_key("browser-deploy"))
    page.wait_for_selector("#deploy-summary tr")
    summary = page.inner_text("#deploy-summary")
    assert "scripted-test" in summary and "Last switch" in summary

    page.click("#reload-profile")
    page.wait_for_function("document.getElementById('deploy-msg').textContent.startsWith('Unchanged')")

    page.click("#run-doctor")
    assert page.is_disabled("#run-doctor") or "Doctor on" in page.inner_text("#deploy-msg")
    page.wait_for_function("document.getElementById('deploy-msg').textContent.startsWith('Doctor on scripted-test')")
    rows = page.locator("#gates tbody tr").all_inner_texts()
    assert [r.split()[0] for r in rows[:4]] == ["1", "2", "3", "4"] and "checked" in rows[-1]
    assert "FAIL" in rows[0] and "NOT RUN" in rows[1]  # the scripted profile's artifact is no file
    assert "NOT RUN" in rows[3] and "no gold question set" in rows[3]  # gate 4 needs a question set
    assert page.is_enabled("#run-doctor")
    deployment = httpx.get(server.url + "/api/v1/deployment", headers=bearer(server.ops)).json()
    # saved where `manualqa doctor` saves it; shown in this browser's zone, UTC in the title (admin_time.js)
    assert page.get_attribute("#gates tbody tr:last-child time", "title") == deployment["gates"]["checked_at"]

    assert page.input_value("#answer-mode") == "generate"
    assert "running server only" in page.inner_text("#mode-note") and "manualqa.toml" in page.inner_text("#mode-note")
    page.select_option("#answer-mode", "extractive")
    page.click("#set-mode")
    page.wait_for_function("document.getElementById('mode-msg').textContent.includes('now extractive')")
    answer = httpx.post(server.url + "/api/v1/ask", headers=bearer(server.ops), json={"question": QUESTION},
                        timeout=60).json()
    assert answer["mode"] == "extractive"
    page.select_option("#answer-mode", "generate")
    page.click("#set-mode")
    page.wait_for_function("document.getElementById('mode-msg').textContent.includes('now generate')")
    answer = httpx.post(server.url + "/api/v1/ask", headers=bearer(server.ops), json={"question": QUESTION},
                        timeout=60).json()
    assert answer["mode"] == "generate" and answer["draft"] == SCRIPT


def test_download_the_answer_log(page: Any, server: GatewayServer) -> None:
    asked = httpx.post(server.url + "/api/v1/ask", headers=bearer(server.ops), json={"question": QUESTION},
                       timeout=60).json()
    login(page, server, server.admin_key("browser-export"))
    page.fill("#log-since", "last week")
    assert page.get_attribute("#export-link", "href") is None  # no download of an error
    page.press("#log-since", "Tab")  # the list asks the server, which explains
    page.wait_for_function("document.getElementById('log-msg').textContent.includes('since')")
    assert page.get_attribute("#export-link", "aria-disabled") == "true"
    page.fill("#log-since", "1h")
    page.press("#log-since", "Tab")
    page.check(f"#outcome-filter input[value='{asked['outcome']}']")
    page.wait_for_function("(outcome) => (document.getElementById('export-link').getAttribute('href') || '')"
                           ".includes('outcome=' + outcome)", arg=asked["outcome"])
    assert page.inner_text("#log-msg") == ""
    href = page.get_attribute("#export-link", "href")
    assert "since=1h" in href and "format=jsonl" in href
    with page.expect_download() as info:
        page.click("#export-link")
    download = info.value
    assert re.fullmatch(rf"manualqa-answers-{asked['outcome']}-since-1h-\d{{8}}T\d{{6}}\.jsonl",
                        download.suggested_filename), download.suggested_filename
    rows = [json.loads(line) for line in Path(download.path()).read_text(encoding="utf-8").splitlines()]
    logged = httpx.get(server.url + "/api/v1/answers", headers=bearer(server.ops),
                       params={"outcome": asked["outcome"], "since": "1h", "limit": 500}).json()["answers"]
    assert rows and [r["id"] for r in rows] == [r["id"] for r in reversed(logged)]
    assert asked["id"] in [r["id"] for r in rows]
    page.wait_for_function(f"document.querySelectorAll('#answers tbody tr').length === {len(rows)}")  # the list agrees

    page.select_option("#export-format", "csv")
    with page.expect_download() as info:
        page.click("#export-link")
    assert info.value.suggested_filename.endswith(".csv")
    assert Path(info.value.path()).read_text(encoding="utf-8").startswith("id,time,question,")


def test_rename_a_manual_and_give_it_its_own_title_back(page: Any, server: GatewayServer) -> None:
    login(page, server, server.ops)
    row = page.locator("#manuals tbody tr", has_text="noaa_lcp_pistonboard_user_manual.pdf")
    original = row.locator("td").first.inner_text()
    page.once("dialog", lambda d: d.accept("Piston board (NOAA LCP)"))
    row.locator("[data-rename]").click()
    page.wait_for_function("[...document.querySelectorAll('#manuals tbody td')].some((td) => "
                           "td.textContent === 'Piston board (NOAA LCP)')")
    listed = httpx.get(server.url + "/api/v1/manuals", headers=bearer(server.ops), timeout=30).json()["manuals"]
    noaa = next(m for m in listed if m["file_name"] == "noaa_lcp_pistonboard_user_manual.pdf")
    assert noaa["title"] == "Piston board (NOAA LCP)" and noaa["pdf_title"] == original
    page.once("dialog", lambda d: d.accept(""))  # empty: the PDF's own title again
    row.locator("[data-rename]").click()
    page.wait_for_function("[...document.querySelectorAll('#manuals tbody td')].some((td) => "
                           f"td.textContent === {json.dumps(original)})")


def test_the_admin_page_on_a_phone(browser: Any, server: GatewayServer) -> None:
    """390x844, touch: every open section fits the width (no sideways scrolling), every visible
    control is a 44 px tap target, and the page is screenshotted for docs/screenshots."""
    from tests.test_browser import shot

    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    try:
        pg = context.new_page()
        pg.set_default_timeout(WAIT_MS)
        login(pg, server, server.ops)
        for summary in pg.locator("#admin details > summary").all():
            summary.click()  # open every section, so its controls are measured too
        widths = pg.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        assert widths[0] <= widths[1], f"the page scrolls sideways on a phone: {widths}"
        small = pg.evaluate("""() => [...document.querySelectorAll('a, button, summary, select, input, textarea')]
            .filter(e => e.offsetParent !== null && e.type !== 'hidden')
            .map(e => [e.id || e.textContent.trim().slice(0, 30), Math.round(e.getBoundingClientRect().height)])
            .filter(([, h]) => h < 44)""")
        assert small == [], f"tap targets under 44 px: {small}"
        pg.evaluate("window.scrollTo(0, 0)")
        shot(pg, "admin-phone.png")
    finally:
        context.close()
