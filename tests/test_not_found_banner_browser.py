"""The technician page's not-found banner says, in the page's language, which value the closest passages
lack and whose passages they are (issue 48, item 7): it used to show the server's English sentence on
a German or Chinese page, and a question naming the other manual was answered with the first one's
evidence.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.browser import WAIT_MS
from tests.support.server import GatewayServer

pytestmark = pytest.mark.slow

VORON = "Voron Design SKR Mini E3 Setup Guide V0.0"


@pytest.fixture(scope="module")
def server(sample_data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayServer]:
    srv = GatewayServer(sample_data_dir, tmp_path_factory.mktemp("banner"), config='[answer]\nmode = "extractive"\n')
    srv.start()
    yield srv
    srv.stop()


def banner(browser: Any, url: str, lang: str, question: str) -> str:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        pg = context.new_page()
        pg.set_default_timeout(WAIT_MS)
        pg.goto(f"{url}/?lang={lang}")
        pg.fill("#question", question)
        pg.click("#ask")
        pg.wait_for_selector("#outcome.not_found")
        assert pg.locator("#cards .card").count() >= 1  # the closest passages the banner speaks of
        return str(pg.locator("#notfound").inner_text())
    finally:
        context.close()


def test_the_banner_names_the_missing_value_and_the_manual_in_the_pages_language(browser: Any,
                                                                                 server: GatewayServer) -> None:
    question = "What baud rate does the Voron serial console use?"
    text = banner(browser, server.url, "en", question)
    assert f"The closest passages in {VORON} do not state a baud rate for this question" in text, text
    text = banner(browser, server.url, "de", question)
    assert f"Die nächstliegenden Textstellen in {VORON} nennen für diese Frage keine Angabe zu Baudrate" in text, text
    text = banner(browser, server.url, "zh", "How many hours does the LCP run on one battery pack?")
    assert "给出的时长只针对问题未提到的其他对象" in text and "Piston-board" in text, text
