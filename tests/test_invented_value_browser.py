"""A value from nowhere, as the technician sees it (issue 25): one banner saying the manuals, as
searched, do not state the value, the closest passages below it, and no note about the model's draft.

Debian's chromium against a real gateway; the scripted runtime (tests/support/scripted.py) stands in
for a model that answers with a thread pitch the Voron 0 guide never gives.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.answer.outcome import INVENTED_TEXT
from tests.support.browser import WAIT_MS
from tests.support.server import SCRIPTED_PROFILE, GatewayServer
from tests.test_browser import ask
from tests.test_technician_page_reads import DESK, NOTES

INVENTED = "The Voron 0 bed screws have a thread pitch of 0.35 mm [1]."
QUESTION = "What thread pitch do the Voron 0 bed screws have?"

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def server(sample_data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayServer]:
    srv = GatewayServer(sample_data_dir, tmp_path_factory.mktemp("invented"),
                        profile=SCRIPTED_PROFILE.format(script=INVENTED, delay=0.0))
    srv.start()
    yield srv
    srv.stop()


def test_a_value_from_nowhere_is_one_not_found_banner_over_the_passages(browser: Any,
                                                                      server: GatewayServer) -> None:
    ctx = browser.new_context(**DESK)
    try:
        pg = ctx.new_page()
        pg.set_default_timeout(WAIT_MS)
        ask(pg, server.url, QUESTION)
        pg.wait_for_selector("#outcome.not_found")
        notes = pg.evaluate(NOTES)
        assert [n[0] for n in notes] == ["notfound"], notes  # no "sentences removed" about a draft not shown
        assert " ".join(INVENTED_TEXT.split()[:8]) in " ".join(notes[0][1].split()), notes
        assert "0.35" not in pg.inner_text("body"), "the made-up value is on screen"
        assert pg.locator("#cards .card").count() >= 1  # the closest passages, to check
    finally:
        ctx.close()
