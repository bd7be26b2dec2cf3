"""The admin page's answer log filtered by several outcomes at once (issue 48, item 9): boxes to tick, tapped
on a 390 px phone and clicked on a desktop, in Debian's chromium against a real gateway. The outcomes
ticked go into the list's request (outcome=a,b, as GET /api/v1/answers takes them), stay with it from
page to page, and into the download link; none ticked is every outcome."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.support.browser import WAIT_MS
from tests.support.server import SCRIPTED_PROFILE, GatewayServer
from tests.test_admin_log_api import row, write

pytestmark = pytest.mark.timeout(600)
BASE = datetime(2026, 11, 2, 9, 0, tzinfo=timezone.utc)
COUNTS = {"answered": 45, "not_found": 12, "error": 6, "evidence_only": 4}  # answered + not_found: two pages
TOTAL = sum(COUNTS.values())
VIEWPORTS = {"desktop": {"width": 1366, "height": 900}, "phone": {"width": 390, "height": 844}}


@pytest.fixture(scope="module")
def server(sample_data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayServer]:
    srv = GatewayServer(sample_data_dir, tmp_path_factory.mktemp("admin-filters"),
                        config="[server]\nallow_anonymous_read = false\n",
                        profile=SCRIPTED_PROFILE.format(script="Six to 36 volts [1].", delay=0.0))
    srv.start()
    srv.ops = srv.admin_key("filter-admin")
    rows, i = [], 0
    for outcome, n in COUNTS.items():
        for _ in range(n):
            rows.append(row(f"question {i} ({outcome})", BASE + timedelta(minutes=i), outcome=outcome))
            i += 1
    write(srv, rows)
    yield srv
    srv.stop()


@pytest.fixture(params=list(VIEWPORTS))
def page(request: pytest.FixtureRequest, browser: Any) -> Iterator[Any]:
    phone = request.param == "phone"
    context = browser.new_context(viewport=VIEWPORTS[request.param], is_mobile=phone, has_touch=phone, locale="en-US")
    pg = context.new_page()
    pg.set_default_timeout(WAIT_MS)
    pg.is_phone = phone
    yield pg
    context.close()


def wait_text(pg: Any, element: str, text: str) -> None:
    pg.wait_for_function("([id, text]) => document.getElementById(id).textContent.includes(text)", arg=[element, text])


def outcomes_listed(pg: Any) -> set[str]:
    return set(pg.locator("#answers tbody tr td:nth-child(3)").all_inner_texts())


def tick(pg: Any, outcome: str) -> None:
    """A tap on a phone, a click on a desktop, on the box's label (its word): the larger target."""
    label = pg.locator("#outcome-filter label", has=pg.locator(f"input[value='{outcome}']"))
    label.scroll_into_view_if_needed()
    if pg.is_phone:
        box = label.bounding_box()
        assert box and box["height"] >= 44, f"the {outcome} box is too small to tap: {box}"
        label.tap()
    else:
        label.click()


def test_the_log_filtered_by_several_outcomes(page: Any, server: GatewayServer) -> None:
    pg = page
    asked: list[dict[str, list[str]]] = []
    pg.on("request", lambda r: asked.append(parse_qs(urlsplit(r.url).query))
          if urlsplit(r.url).path == "/api/v1/answers" else None)
    pg.goto(server.url + "/admin")
    pg.fill("#admin-key", server.ops)
    pg.click("#login")
    pg.wait_for_selector("#admin:not([hidden])")
    wait_text(pg, "log-range", f"1–50 of {TOTAL}")
    boxes = pg.locator("#outcome-filter input[type=checkbox]")
    assert boxes.count() == 5 and pg.locator("#outcome-filter input:checked").count() == 0
    assert pg.is_visible("#outcome-any")  # "none ticked: all"

    tick(pg, "answered")
    tick(pg, "not_found")
    both = COUNTS["answered"] + COUNTS["not_found"]
    wait_text(pg, "log-range", f"1–50 of {both}")
    assert outcomes_listed(pg) == {"answered", "not_found"} and not pg.is_visible("#outcome-any")
    assert asked[-1]["outcome"] == ["answered,not_found"] and asked[-1]["offset"] == ["0"]
    href = pg.get_attribute("#export-link", "href") or ""
    assert parse_qs(urlsplit(href).query)["outcome"] == ["answered,not_found"]  # the download: the same answers
    if not pg.is_phone:
        with pg.expect_download() as info:
            pg.click("#export-link")
        assert info.value.suggested_filename.startswith("manualqa-answers-answered+not_found-")
        lines = Path(info.value.path()).read_text(encoding="utf-8").splitlines()
        assert len(lines) == both and {json.loads(x)["outcome"] for x in lines} == {"answered", "not_found"}

    # the next page keeps the filter: the oldest answers of the two outcomes (the answered ones), none other
    pg.locator("#log-next").scroll_into_view_if_needed()
    if pg.is_phone:
        pg.tap("#log-next")
    else:
        pg.click("#log-next")
    wait_text(pg, "log-range", f"51–{both} of {both}")
    assert pg.locator("#answers tbody tr").count() == both - 50
    assert outcomes_listed(pg) == {"answered"} and "question 0 (answered)" in pg.inner_text("#answers tbody")
    assert asked[-1]["outcome"] == ["answered,not_found"] and asked[-1]["offset"] == ["50"]

    # a change of the boxes starts again at the first page
    tick(pg, "answered")  # off again
    wait_text(pg, "log-range", f"1–{COUNTS['not_found']} of {COUNTS['not_found']}")
    assert outcomes_listed(pg) == {"not_found"} and asked[-1]["offset"] == ["0"]
    tick(pg, "not_found")
    wait_text(pg, "log-range", f"1–50 of {TOTAL}")
    assert "outcome" not in asked[-1] and pg.is_visible("#outcome-any")
    widths = pg.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert widths[0] <= widths[1], f"the page scrolls sideways: {widths}"
