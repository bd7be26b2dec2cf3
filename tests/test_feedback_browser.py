"""Feedback on the technician page (issue 48 item 6), in Debian's chromium against a real gateway:
one vote per answer that can be changed (Helpful / Not helpful toggle, the latest counts, the gateway
keeps one current vote per answer per client), and the comment sent on its own with its own Send
button, so a comment typed after the vote is not lost; on a 390x844 phone and a desktop.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.browser import WAIT_MS
from tests.support.server import SCRIPTED_PROFILE, GatewayServer
from tests.test_browser import QUESTION, SCRIPT, ask
from tests.test_viewer import PHONE

FINAL = "['answered', 'evidence only', 'not found'].includes(document.getElementById('outcome').textContent)"

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def server(sample_data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayServer]:
    srv = GatewayServer(sample_data_dir, tmp_path_factory.mktemp("feedback"),
                        config="[server]\nrate_limit_per_minute = 600\n",
                        profile=SCRIPTED_PROFILE.format(script=SCRIPT, delay=0.0))
    srv.start()
    yield srv
    srv.stop()


def newest_answer(server: GatewayServer) -> dict[str, Any]:
    rows = httpx.get(server.url + "/api/v1/answers", params={"limit": 1}).json()["answers"]
    detail = httpx.get(f"{server.url}/api/v1/answers/{rows[0]['id']}")
    assert detail.status_code == 200, detail.text
    return detail.json()  # type: ignore[no-any-return]


def answered(pg: Any, server: GatewayServer) -> None:
    ask(pg, server.url, QUESTION)
    pg.wait_for_function(FINAL)
    pg.wait_for_selector("#feedback:not([hidden])")


@pytest.mark.parametrize("size", ["phone", "desk"])
def test_one_vote_that_can_be_changed_and_a_comment_sent_after_it(browser: Any, server: GatewayServer,
                                                                   size: str) -> None:
    ctx = browser.new_context(**(PHONE if size == "phone" else {"viewport": {"width": 1280, "height": 900}}))
    pg = ctx.new_page()
    pg.set_default_timeout(WAIT_MS)
    try:
        answered(pg, server)
        pg.click("#up")
        pg.wait_for_function("document.getElementById('up').getAttribute('aria-pressed') === 'true'")
        pg.click("#down")  # changed my mind: the latest vote counts
        pg.wait_for_function("document.getElementById('down').getAttribute('aria-pressed') === 'true'")
        assert pg.get_attribute("#up", "aria-pressed") == "false"
        # the comment typed after the vote goes with its own button, with the current vote
        pg.fill("#comment", "right page, but the Z offset is missing")
        assert pg.is_visible("#send-comment")
        pg.click("#send-comment")
        pg.wait_for_function("document.getElementById('fb-status').textContent.includes('comment')")
        assert pg.text_content("#fb-status") == "Thank you — comment saved."
        feedback = newest_answer(server)["feedback"]
        assert [(f["thumbs"], f["comment"]) for f in feedback] == [(-1, "right page, but the Z offset is missing")]
        # a second change of vote keeps the comment
        pg.click("#up")
        pg.wait_for_function("document.getElementById('up').getAttribute('aria-pressed') === 'true'")
        feedback = newest_answer(server)["feedback"]
        assert [(f["thumbs"], f["comment"]) for f in feedback] == [(1, "right page, but the Z offset is missing")]
        # the Send button and the comment box fit a phone
        width = pg.evaluate("document.scrollingElement.scrollWidth")
        assert width <= pg.viewport_size["width"], width
    finally:
        ctx.close()


def test_a_comment_before_any_vote_asks_for_the_vote_first(browser: Any, server: GatewayServer) -> None:
    ctx = browser.new_context(**PHONE)
    pg = ctx.new_page()
    pg.set_default_timeout(WAIT_MS)
    try:
        answered(pg, server)
        pg.fill("#comment", "wrong page")
        pg.click("#send-comment")
        pg.wait_for_function("document.getElementById('fb-status').textContent.length > 0")
        assert "first" in pg.text_content("#fb-status")
        assert newest_answer(server)["feedback"] == []
        pg.click("#down")  # the comment typed before the vote is sent with the vote's Send
        pg.wait_for_function("document.getElementById('down').getAttribute('aria-pressed') === 'true'")
        pg.click("#send-comment")
        pg.wait_for_function("document.getElementById('fb-status').textContent.includes('comment')")
        assert [(f["thumbs"], f["comment"]) for f in newest_answer(server)["feedback"]] == [(-1, "wrong page")]
    finally:
        ctx.close()


def test_the_api_keeps_one_current_vote_per_client(server: GatewayServer) -> None:
    """Two keys vote on one answer: each has one current vote; a vote without a comment keeps it."""
    r = httpx.post(server.url + "/api/v1/ask", json={"question": QUESTION, "mode": "extractive"}, timeout=120)
    answer_id = r.json()["id"]
    keys = [server.cli("keys", "create", name, "--role", "reader").stdout.strip() for name in ("tab-a", "tab-b")]
    url = f"{server.url}/api/v1/answers/{answer_id}/feedback"
    for key, body in [(keys[0], {"thumbs": 1, "comment": "good"}), (keys[1], {"thumbs": -1}),
                      (keys[0], {"thumbs": -1}), (keys[0], {"thumbs": 1})]:
        out = httpx.post(url, json=body, headers={"Authorization": f"Bearer {key}"})
        assert out.status_code == 201, out.text
    assert out.json() == {"answer_id": answer_id, "thumbs": 1, "comment": "good"}
    feedback = httpx.get(f"{server.url}/api/v1/answers/{answer_id}").json()["feedback"]
    assert sorted((f["key_name"], f["thumbs"], f["comment"]) for f in feedback) == [
        ("tab-a", 1, "good"), ("tab-b", -1, "")]
