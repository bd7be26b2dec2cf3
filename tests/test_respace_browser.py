"""The admin page names the pages whose glued words pdftotext read again (ingest.respace), in Debian's chromium
against a real gateway, beside the pages read by OCR: an administrator sees which pages' text is poppler's
reading rather than the text layer's, without reading the ingest log."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.browser import WAIT_MS
from tests.support.pdfs import glued_content, pages_pdf, text_page
from tests.support.server import GatewayServer
from tests.test_respace import NEEDS_POPPLER, SENTENCES

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600), NEEDS_POPPLER]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Iterator[GatewayServer]:
    from gateway.config import Settings
    from gateway.services import Services

    folder = tmp_path_factory.mktemp("respace-browser")
    lines = b" ".join(b"(" + s.encode("cp1252") + b") '" for s in SENTENCES)
    spaced = b"BT /F1 11 Tf 20 TL 40 720 Td " + lines + b" ET"
    glued = folder / "pulsfilter_anleitung.pdf"
    glued.write_bytes(pages_pdf([spaced, spaced, glued_content(SENTENCES)]))  # page 3 of 3 glued
    plain = folder / "spindle_notes.pdf"
    plain.write_bytes(text_page(["Spindle notes", "Grease the spindle bearings every 500 hours of running."]))
    gw = Services(Settings(data_dir=folder / "data"), embedder=embedder)
    try:
        report = gw.ingest([glued, plain])
    finally:
        gw.log.close()
    assert report.version and not report.failed, report
    srv = GatewayServer(folder / "data", folder / "srv")
    srv.start()
    yield srv
    srv.stop()


@pytest.mark.parametrize(("lang", "says"), [("en", "words re-spaced by pdftotext: 3"),
                                            ("de", "Wörter von pdftotext neu getrennt: 3")])
def test_the_admin_page_names_the_pages_read_again(browser: Any, server: GatewayServer, lang: str, says: str) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale=lang)
    try:
        page = context.new_page()
        page.set_default_timeout(WAIT_MS)
        page.goto(server.url + f"/admin?lang={lang}")
        page.fill("#admin-key", server.admin_key(f"respace-{lang}"))
        page.click("#login")
        page.wait_for_selector("#manuals tbody tr")
        glued = page.locator("#manuals tbody tr", has_text="pulsfilter_anleitung.pdf").inner_text()
        plain = page.locator("#manuals tbody tr", has_text="spindle_notes.pdf").inner_text()
        assert says in glued, glued
        assert "pdftotext" not in plain, plain  # a manual of ordinary text: nothing to say
    finally:
        context.close()
