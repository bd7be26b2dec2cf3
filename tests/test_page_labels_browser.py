"""The technician page shows the printed page beside the PDF page, and still opens the PDF page.

Debian's chromium through Playwright (as tests/test_browser.py) against a real server whose index
holds the NOAA sample with /PageLabels added (PDF page n printed n - 1, page 1 printed "i").
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ingest.models import ChunkParams, ParseLimits
from retrieval.versions import IndexStore
from tests.support.browser import WAIT_MS
from tests.support.server import SCRIPTED_PROFILE, GatewayServer
from tests.test_page_labels import NOAA, QUESTION, expected_label, labelled_copy

SCRIPT = "Connect the adapter to the console connector J1 of the piston board [1]."

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, sample_dir: Path, embedder: Any) -> Iterator[GatewayServer]:
    root = tmp_path_factory.mktemp("labels-browser")
    pdf = labelled_copy(sample_dir / NOAA, root / "in" / NOAA)
    assert IndexStore(root / "data").ingest([pdf], embedder, ChunkParams(), ParseLimits()).version
    srv = GatewayServer(root / "data", root / "srv", profile=SCRIPTED_PROFILE.format(script=SCRIPT, delay=0.0))
    srv.start()
    yield srv
    srv.stop()


def test_card_shows_printed_page_and_opens_the_pdf_page(browser: Any, server: GatewayServer) -> None:
    page = browser.new_page()
    try:
        page.set_default_timeout(WAIT_MS)
        page.goto(server.url + "/")
        page.fill("#question", QUESTION)
        page.click("#ask")
        page.wait_for_selector("#outcome.answered")
        card = page.locator("#cards .card").first
        meta = card.locator(".meta").inner_text()
        found = re.match(r"page (\d+) \(printed (\S+)\)", meta)
        assert found, meta
        number = int(found.group(1))
        assert found.group(2) == expected_label(number)
        link = card.locator("a.open-page")
        assert link.inner_text().strip() == f"Open page {number}"
        assert link.get_attribute("href").endswith(f"#page={number}")
    finally:
        page.close()
