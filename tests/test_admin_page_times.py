"""Every time on the admin page in the browser's own zone (issue 48, item 9), in Debian's chromium against a
real gateway: index versions' creation, access keys (created, revoked), the audit trail (the CLI's rows
too, named as the command line's), an answer's provenance, the unanswered view and the status panel, each
a <time> shown as the answer log shows it (one function, admin_time.js) with the UTC value in its title.
Two zones that are not UTC, one of them a half-hour off it, on a desktop and on a phone."""

from __future__ import annotations

import getpass
import re
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.browser import WAIT_MS
from tests.support.http import bearer
from tests.support.server import SCRIPTED_PROFILE, GatewayServer
from tests.test_admin_log_api import row, write
from tests.test_admin_log_browser import shown_time

pytestmark = pytest.mark.timeout(600)
CASES = {"desktop": ({"width": 1366, "height": 900}, "Asia/Kolkata"),
         "phone": ({"width": 390, "height": 844}, "America/Los_Angeles")}
UNANSWERED = "What is the warranty period of the espresso machine?"


@pytest.fixture(scope="module")
def server(sample_data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayServer]:
    srv = GatewayServer(sample_data_dir, tmp_path_factory.mktemp("admin-times"),
                        config="[server]\nallow_anonymous_read = false\n",
                        profile=SCRIPTED_PROFILE.format(script="Six to 36 volts [1].", delay=0.0))
    srv.start()
    srv.ops = srv.admin_key("times-admin")
    srv.cli("keys", "create", "old-kiosk")
    srv.cli("keys", "revoke", "old-kiosk")
    now = datetime.now(timezone.utc).replace(microsecond=0)
    write(srv, [row(UNANSWERED, now - timedelta(hours=30), outcome="not_found"),
                row(UNANSWERED, now - timedelta(hours=5), outcome="not_found"),
                row("What baud rate does the debug console use?", now - timedelta(hours=2))])
    yield srv
    srv.stop()


@pytest.fixture(params=list(CASES))
def page(request: pytest.FixtureRequest, browser: Any) -> Iterator[Any]:
    viewport, zone = CASES[request.param]
    phone = request.param == "phone"
    context = browser.new_context(viewport=viewport, is_mobile=phone, has_touch=phone, locale="en-US",
                                  timezone_id=zone)
    pg = context.new_page()
    pg.set_default_timeout(WAIT_MS)
    pg.zone = zone
    yield pg
    context.close()


def local(pg: Any, where: Any) -> str:
    """The one <time> in `where`: this browser's zone in its text, UTC in its datetime and title (returned)."""
    times = where.locator("time")
    assert times.count() == 1, f"not one <time> in: {where.inner_html()}"
    iso = times.get_attribute("title")
    assert iso and times.get_attribute("datetime") == iso and iso.endswith("Z"), iso
    day, clock = shown_time(datetime.fromisoformat(iso.replace("Z", "+00:00")), pg.zone)
    text = times.inner_text()
    assert day in text and clock in text, (text, day, clock, pg.zone)
    return iso


def test_every_time_on_the_admin_page_is_local(page: Any, server: GatewayServer) -> None:
    pg, auth = page, bearer(server.ops)
    pg.goto(server.url + "/admin")
    pg.fill("#admin-key", server.ops)
    pg.click("#login")
    pg.wait_for_selector("#admin:not([hidden])")

    # index versions: when each was built
    versions = httpx.get(server.url + "/api/v1/index/versions", headers=auth, timeout=30).json()["versions"]
    pg.wait_for_selector(f"#versions tbody tr:has-text('{versions[0]['id']}')")
    for v in versions:
        cell = pg.locator("#versions tbody tr", has_text=v["id"]).locator("td").nth(1)
        iso = local(pg, cell)
        assert datetime.fromisoformat(iso.replace("Z", "+00:00")) == \
            datetime.fromisoformat(str(v["created_at"]).replace("Z", "+00:00"))

    # access keys: created, and revoked for a revoked one
    keys = {k["name"].split("@revoked-")[0]: k for k in
            httpx.get(server.url + "/api/v1/keys", headers=auth, timeout=30).json()["keys"]}
    pg.click("#keys-box > summary")
    revoked = pg.locator("#keys tbody tr.revoked", has_text="old-kiosk")
    assert local(pg, revoked.locator("td").nth(2)) == keys["old-kiosk"]["created"]
    assert local(pg, revoked.locator("td").nth(4)) == keys["old-kiosk"]["revoked"]
    assert "revoked" in revoked.locator("td").nth(4).inner_text()

    # the audit trail, the CLI's own rows among them
    cli = f"cli:{getpass.getuser()} (command line)"
    pg.wait_for_function("(who) => document.getElementById('audit').textContent.includes(who)", arg=cli)
    revoke = pg.locator("#audit tbody tr", has_text="key.revoke").filter(has_text="old-kiosk")
    assert cli in revoke.inner_text()
    local(pg, revoke.locator("td").first)

    # an answer's provenance
    pg.locator("#answers tbody tr", has_text="baud rate").click()
    pg.wait_for_selector("#provenance dl.facts")
    dd = pg.locator("#provenance dl.facts dt", has_text=re.compile(r"^Time$")).locator("xpath=following-sibling::dd[1]")
    shown = local(pg, dd)
    assert shown == local(pg, pg.locator("#answers tbody tr", has_text="baud rate").locator("td").first)

    # what went unanswered: each question's time and the group's last
    pg.click("#unanswered-box > summary")
    group = pg.locator("#unanswered-groups .unanswered-group", has_text=UNANSWERED)
    group.wait_for()
    group.locator("details.group-questions > summary").click()
    items = group.locator("details.group-questions li")
    assert items.count() == 2
    asked = sorted(local(pg, items.nth(i)) for i in range(2))
    assert local(pg, group.locator("p.muted")) == asked[-1]  # "last <time>"

    # the status panel's "as of"
    pg.click("#status-box > summary")
    pg.wait_for_selector("#status-table tr[data-key='disk']")
    local(pg, pg.locator("#status-table tr", has_text="as of"))
    widths = pg.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert widths[0] <= widths[1], f"the page scrolls sideways: {widths}"
