"""A scanned manual in Debian's chromium against a real gateway (issue 26): the answer cites the scanned
page, its card says "OCR, check the page", and "Open page N" opens the viewer with the cited words
marked by their OCR boxes: over the words of the cited line in the page image, not over the others.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.browser import WAIT_MS
from tests.support.pdfs import scanned_pdf
from tests.support.server import GatewayServer
from ui.vendor_pdfjs import DEST, VERSION, is_current

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.timeout(600)]

LINES = [
    "Coolant pump service",
    "Replace the impeller seal every 2000 hours of running.",
    "Tighten the pump housing bolts to 85 N m in a cross pattern.",
    "The flow sensor shows alarm code E47 when the intake filter is blocked.",
]
QUESTION = "How often should the impeller seal be replaced?"
RENDERED = "['rendered', 'error', 'fallback'].includes(document.body.dataset.state)"
# As tests/test_browser.py: into docs/screenshots/ only when asked (MANUALQA_SCREENSHOTS=1)
SHOTS = (Path(__file__).resolve().parents[1] / "docs" / "screenshots" if os.environ.get("MANUALQA_SCREENSHOTS") == "1"
         else Path(tempfile.gettempdir()) / "manualqa-screenshots")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Iterator[GatewayServer]:
    if not is_current(DEST):
        pytest.fail(f"pdf.js {VERSION} is not vendored in {DEST}: run `make vendor`")
    from gateway.config import Settings
    from gateway.services import Services

    folder = tmp_path_factory.mktemp("ocr-browser")
    manuals = folder / "manuals"
    manuals.mkdir()
    scanned_pdf(manuals, "coolant_pump_scan.pdf", [["Coolant pump", "Scanned service manual, 2019 edition."], LINES])
    for helper in manuals.glob(".*"):
        helper.unlink()
    report = Services(Settings(data_dir=folder / "data"), embedder=embedder).ingest([manuals])
    assert report.version and not report.failed, report
    srv = GatewayServer(folder / "data", folder / "srv", config='[answer]\nmode = "extractive"\n')
    srv.start()
    yield srv
    srv.stop()


def test_ocr_citation_says_so_and_the_viewer_marks_the_cited_words(browser: Any, server: GatewayServer) -> None:
    answer = httpx.post(server.url + "/api/v1/ask", json={"question": QUESTION}, timeout=120).json()
    cited = [c for c in answer["citations"] if c["page"] == 2]
    assert answer["outcome"] in ("answered", "evidence_only") and cited, answer
    assert cited[0]["source"] == "ocr" and 60 <= cited[0]["ocr_confidence"] <= 100, cited[0]
    page_2 = httpx.get(f"{server.url}/api/v1/manuals/{cited[0]['manual_sha256']}/pages/2").json()
    assert page_2["source"] == "ocr" and {"impeller", "E47"} <= {w["text"] for w in page_2["words"]}

    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.set_default_timeout(WAIT_MS)
        page.goto(server.url + "/")
        page.fill("#question", QUESTION)
        page.click("#ask")
        page.wait_for_selector("#outcome.answered, #outcome.evidence_only")
        card = next(c for c in page.locator("#cards .card").all() if "page 2" in c.locator(".meta").inner_text())
        assert "OCR, check the page" in card.locator(".ocr-note").inner_text()
        cited_text = " ".join(card.locator("blockquote mark").all_inner_texts())
        assert "impeller" in cited_text, card.inner_text()
        SHOTS.mkdir(parents=True, exist_ok=True)
        card.screenshot(path=str(SHOTS / "technician-ocr-card.png"))
        card.locator("a.open-page").click()  # the viewer opens in the same tab (issue 48 item 5)
        viewer = page
        viewer.wait_for_url("**/viewer?**")
        viewer.wait_for_function(RENDERED, timeout=60_000)
        shown = viewer.evaluate("""() => {
            const box = document.getElementById('page').getBoundingClientRect();
            return {state: document.body.dataset.state, marks: document.getElementById('marks').textContent,
                    words: [...document.querySelectorAll('#ocr-layer .highlight')].map((e) => {
                        const r = e.getBoundingClientRect();
                        return {word: e.dataset.word, x: (r.left - box.left) / box.width,
                                y: (r.top - box.top) / box.height, w: r.width, h: r.height};
                    })};
        }""")
        assert shown["state"] == "rendered", shown
        marked = [w["word"] for w in shown["words"]]
        assert {"impeller", "seal", "2000"} <= set(marked), shown
        assert not {"alarm", "E47", "Tighten"} & set(marked), shown  # other lines stay unmarked
        assert "read by OCR" in shown["marks"] and "highlighted" in shown["marks"], shown["marks"]
        # each mark lies over its word in the page image: where OCR found it, at a word's size
        for w in shown["words"]:
            boxes = [o["box"] for o in page_2["words"] if o["text"] == w["word"]]
            assert any(abs(w["x"] - x0) < 0.01 and abs(w["y"] - y0) < 0.01 for x0, y0, _x1, _y1 in boxes), (w, boxes)
            assert 3 < w["h"] < 60 and w["w"] > 3, w
        ys = {round(w["y"], 2) for w in shown["words"]}
        assert max(ys) - min(ys) < 0.03  # one line: the cited sentence
        assert re.search(r"\d+ % confidence", shown["marks"])
        viewer.screenshot(path=str(SHOTS / "viewer-ocr.png"))
        assert (SHOTS / "viewer-ocr.png").stat().st_size < 400 * 1024
    finally:
        context.close()
