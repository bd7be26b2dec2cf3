"""The answer lives in the URL (issue 48 item 5), in Debian's chromium against a real gateway: the
question, manual and mode are in ?q=...&manual=...&mode=..., the logged answer's id in #a=<id>; Back from
another page, a reload and a shared link restore the answer (from the log by id, not asked again);
"Open page" opens the viewer in the same tab and the viewer's "Back to the answer" returns to it; a
question over the API's 2,000 characters is refused on the page in words, not cut silently.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.support.browser import WAIT_MS
from tests.support.server import SCRIPTED_PROFILE, GatewayServer
from tests.test_browser import QUESTION, SCRIPT, ask
from tests.test_viewer import PHONE, RENDERED, VORON

FINAL = "['answered', 'evidence only', 'not found'].includes(document.getElementById('outcome').textContent)"

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def server(sample_data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayServer]:
    srv = GatewayServer(sample_data_dir, tmp_path_factory.mktemp("answer-url"),
                        config="[server]\nrate_limit_per_minute = 600\n",
                        profile=SCRIPTED_PROFILE.format(script=SCRIPT, delay=0.0))
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture()
def phone(browser: Any) -> Iterator[Any]:
    ctx = browser.new_context(**PHONE)
    pg = ctx.new_page()
    pg.set_default_timeout(WAIT_MS)
    yield pg
    ctx.close()


def asks(pg: Any) -> list[str]:
    """Every POST /api/v1/ask the page sends."""
    seen: list[str] = []
    pg.on("request", lambda r: seen.append(r.url) if r.method == "POST" and r.url.endswith("/api/v1/ask") else None)
    return seen


def shown(pg: Any) -> dict[str, Any]:
    pg.wait_for_function(FINAL)
    return pg.evaluate("""() => ({question: document.getElementById('question').value,
        manual: document.getElementById('manual').value, mode: document.getElementById('mode').value,
        outcome: document.getElementById('outcome').textContent,
        answer: document.getElementById('answer').textContent,
        cards: document.querySelectorAll('#cards .card').length})""")


def test_back_reload_and_a_shared_link_restore_the_answer(browser: Any, phone: Any, server: GatewayServer) -> None:
    sent = asks(phone)
    phone.goto(server.url + "/")
    phone.wait_for_function("document.getElementById('manual').options.length > 1")
    phone.select_option("#manual", VORON)
    phone.select_option("#mode", "extractive")
    phone.fill("#question", QUESTION)
    phone.click("#ask")
    first = shown(phone)
    phone.wait_for_function("location.hash.startsWith('#a=')")
    url = urlsplit(phone.url)
    assert parse_qs(url.query) == {"q": [QUESTION], "manual": [VORON], "mode": ["extractive"]}
    answer_id = url.fragment.removeprefix("a=")
    assert first["cards"] >= 1 and first["answer"]
    assert len(sent) == 1

    phone.click("header nav a[href='/admin']")
    phone.wait_for_url("**/admin")
    phone.go_back()
    back = shown(phone)
    assert back == first, back
    phone.reload()
    assert shown(phone) == first
    assert len(sent) == 1, "the answer came back from the log by id, not asked again"

    ctx = browser.new_context(**PHONE)  # a shared link, in another browser
    try:
        other = ctx.new_page()
        other.set_default_timeout(WAIT_MS)
        other.goto(f"{server.url}/?{url.query}#a={answer_id}")
        assert shown(other) == first
        # the link without the answer id asks the question again
        other.goto(f"{server.url}/?{url.query}")
        again = shown(other)
        assert again["question"] == QUESTION and again["manual"] == VORON and again["cards"] >= 1
    finally:
        ctx.close()


def test_a_second_question_is_a_new_history_entry(phone: Any, server: GatewayServer) -> None:
    ask(phone, server.url, QUESTION)
    shown(phone)
    phone.fill("#question", "What is the Voron 0 bed size?")
    phone.click("#ask")
    assert shown(phone)["question"] == "What is the Voron 0 bed size?"
    phone.wait_for_function("location.hash.startsWith('#a=')")
    phone.go_back()
    phone.wait_for_function(f"document.getElementById('question').value === {QUESTION!r}")
    assert shown(phone)["question"] == QUESTION


def test_open_page_opens_the_viewer_in_the_same_tab_and_it_returns_to_the_answer(phone: Any,
                                                                                   server: GatewayServer) -> None:
    ask(phone, server.url, QUESTION)
    first = shown(phone)
    phone.wait_for_function("location.hash.startsWith('#a=')")
    answer_url = phone.url
    pages = len(phone.context.pages)
    phone.click("#cards .card .open-page")
    phone.wait_for_url("**/viewer?**")
    assert len(phone.context.pages) == pages, "Open page opened a new tab"
    phone.wait_for_function(RENDERED)
    assert phone.is_visible("#back")
    phone.click("#back")
    phone.wait_for_url(answer_url)
    assert shown(phone) == first


def test_a_question_over_the_limit_is_refused_in_words(phone: Any, server: GatewayServer) -> None:
    sent = asks(phone)
    phone.goto(server.url + "/")
    long = ("How do I level the bed? " * 100)[:2100]
    phone.fill("#question", long)
    assert len(phone.input_value("#question")) == 2100, "the box cut the question"
    phone.click("#ask")
    phone.wait_for_selector("#too-long:not([hidden])")
    assert "2100" in phone.text_content("#too-long") and "2000" in phone.text_content("#too-long")
    assert sent == [] and phone.is_hidden("#result")
