"""The answer log and the audit trail on the admin page (issue 48, item 9), in Debian's chromium driven by
Playwright against a real gateway, on a desktop and on a 390 px phone: page through the log, filter it
by client, read its times in the browser's own time zone, open a long question that is clipped to two
lines, and see one's own admin actions in the audit list."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from tests.support.browser import WAIT_MS
from tests.support.server import SCRIPTED_PROFILE, GatewayServer
from tests.test_admin_log_api import row, write

pytestmark = pytest.mark.timeout(600)
BASE = datetime(2026, 11, 20, 23, 30, tzinfo=timezone.utc)
LONG = ("When the piston board is powered from the 24 V bench supply and the debug console shows a brown-out "
        "reset every few seconds while the actuator moves, " * 6).strip()
ROWS = 57  # a page of 50 and one of 7
REPLAYED = 12


@pytest.fixture(scope="module")
def server(sample_data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayServer]:
    srv = GatewayServer(sample_data_dir, tmp_path_factory.mktemp("admin-log-browser"),
                        config="[server]\nallow_anonymous_read = false\n",
                        profile=SCRIPTED_PROFILE.format(script="Six to 36 volts [1].", delay=0.0))
    srv.start()
    srv.ops = srv.admin_key("log-admin")
    rows = [row(f"question {i}", BASE + timedelta(minutes=i), client="replay" if i % 4 == 0 and i < 48 else "web")
            for i in range(ROWS - 1)]
    rows.append(row(LONG, BASE + timedelta(minutes=ROWS), client="api"))
    assert sum(r["client"] == "replay" for r in rows) == REPLAYED
    write(srv, rows)
    yield srv
    srv.stop()


def login(pg: Any, server: GatewayServer) -> None:
    pg.goto(server.url + "/admin")
    pg.fill("#admin-key", server.ops)
    pg.click("#login")
    pg.wait_for_selector("#admin:not([hidden])")


def wait_text(pg: Any, element: str, text: str) -> None:
    pg.wait_for_function("([id, text]) => document.getElementById(id).textContent.includes(text)", arg=[element, text])


def shown_time(moment: datetime, zone: str) -> tuple[str, str]:
    """What en-US's medium date and time say for `moment` in `zone`: ("Nov 21, 2026", "7:30:00")."""
    local = moment.astimezone(ZoneInfo(zone))
    return f"{local:%b} {local.day}, {local.year}", f"{(local.hour % 12) or 12}:{local:%M:%S}"


def page_the_log(pg: Any) -> None:
    wait_text(pg, "log-range", f"1–50 of {ROWS}")
    assert pg.locator("#answers tbody tr").count() == 50 and pg.is_disabled("#log-prev")
    pg.click("#log-next")
    wait_text(pg, "log-range", f"51–{ROWS} of {ROWS}")
    assert pg.locator("#answers tbody tr").count() == ROWS - 50 and pg.is_disabled("#log-next")
    assert "question 0" in pg.inner_text("#answers tbody")  # the oldest, on the last page
    pg.click("#log-prev")
    wait_text(pg, "log-range", f"1–50 of {ROWS}")


def filter_by_client(pg: Any) -> None:
    pg.select_option("#client-filter", "replay")
    wait_text(pg, "log-range", f"1–{REPLAYED} of {REPLAYED}")
    clients = pg.locator("#answers tbody tr td:nth-child(4)").all_inner_texts()
    assert len(clients) == REPLAYED and all(c.endswith("Replay") for c in clients), clients
    assert "replay" in (pg.get_attribute("#export-link", "href") or "")  # the download follows the filter
    pg.select_option("#client-filter", "")
    wait_text(pg, "log-range", f"1–50 of {ROWS}")


def times_are_local(pg: Any, zone: str) -> None:
    assert zone in pg.inner_text("#log-times")
    cell = pg.locator("#answers tbody tr", has_text="question 55").locator("td").first
    day, clock = shown_time(BASE + timedelta(minutes=55), zone)
    text = cell.inner_text()
    assert day in text and clock in text, (text, day, clock)
    assert cell.locator("time").get_attribute("datetime") == "2026-11-21T00:25:00.000Z"  # UTC kept


def audit_lists(pg: Any, *texts: str) -> None:
    pg.wait_for_function("(texts) => texts.every((t) => document.getElementById('audit').textContent.includes(t))",
                         arg=list(texts))


def test_the_log_and_the_audit_trail_on_a_desktop(browser: Any, server: GatewayServer) -> None:
    context = browser.new_context(viewport={"width": 1366, "height": 900}, locale="en-US", timezone_id="Asia/Shanghai")
    try:
        pg = context.new_page()
        pg.set_default_timeout(WAIT_MS)
        login(pg, server)
        page_the_log(pg)
        filter_by_client(pg)
        times_are_local(pg, "Asia/Shanghai")

        # a long question: two lines until its row is tapped, then whole (and whole in the provenance)
        question = pg.locator("#answers tbody tr", has_text="brown-out").locator(".clip")
        clipped = question.evaluate("(e) => [e.scrollHeight, e.clientHeight, "
                                    "parseFloat(getComputedStyle(e).lineHeight)]")
        assert clipped[0] > clipped[1] and clipped[1] <= 2.5 * clipped[2], clipped
        question.click()
        pg.wait_for_selector("#provenance dl.facts")
        opened = question.evaluate("(e) => [e.scrollHeight, e.clientHeight]")
        assert opened[0] <= opened[1] and opened[1] > clipped[1], opened
        assert LONG in pg.inner_text("#provenance dl.facts")

        # the audit trail: this login, then a change of the retention made here
        audit_lists(pg, "log-admin (key)", "login")
        pg.fill("#retention-days", "3650")
        pg.click("#set-retention")
        wait_text(pg, "retention-msg", "3650 days")
        audit_lists(pg, "retention.set", "log-admin (admin session)", "3650")
        assert "older than 3650 days" in pg.inner_text("#retention-note")
        first = pg.locator("#audit tbody tr").first.inner_text()
        assert "retention.set" in first and "ok" in first
        pg.fill("#retention-days", "0")
        pg.click("#set-retention")
        wait_text(pg, "retention-note", "kept forever")
        wait_text(pg, "log-range", f"1–50 of {ROWS}")  # 0 deleted nothing
    finally:
        context.close()


def test_the_log_and_the_audit_trail_on_a_phone(browser: Any, server: GatewayServer) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True,
                                  locale="en-US", timezone_id="America/New_York")
    try:
        pg = context.new_page()
        pg.set_default_timeout(WAIT_MS)
        login(pg, server)
        page_the_log(pg)
        filter_by_client(pg)
        times_are_local(pg, "America/New_York")
        audit_lists(pg, "login", "log-admin (key)")
        entry = pg.locator("#audit tbody tr").first
        entry.scroll_into_view_if_needed()
        assert entry.is_visible() and entry.locator("td").nth(2).get_attribute("data-label") == "Action"  # a card
        widths = pg.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        assert widths[0] <= widths[1], f"the page scrolls sideways on a phone: {widths}"
    finally:
        context.close()
