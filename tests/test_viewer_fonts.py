"""The page viewer on a manual whose fonts are not embedded (issue 10): many equipment manuals from
Asian manufacturers name a CJK font with a predefined CMap (UniGB-UCS2-H, ...) instead of embedding
it, and pdf.js can only read such text with the CMap files, which are vendored beside it
(ui/vendor_pdfjs.py, cmaps/) and fetched from this gateway, never from a CDN. Real chromium, real
gateway, a PDF written here with a non-embedded Adobe-GB1 font and a non-embedded Helvetica."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest

from tests.support.pdfs import stream, write_pdf
from tests.support.server import GatewayServer
from ui.vendor_pdfjs import DEST, VERSION, is_current

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.timeout(600)]
RENDERED = "['rendered', 'error', 'fallback'].includes(document.body.dataset.state)"
CJK = "\u6cf5\u63a7\u5236\u5668"  # "pump controller" in Chinese, four CIDs in UCS-2


def cjk_manual() -> bytes:
    """One page: an English paragraph in Helvetica and a Chinese heading in STSong-Light, neither embedded."""
    ucs2 = CJK.encode("utf-16-be").hex().upper().encode()
    content = (b"BT /F2 24 Tf 72 720 Td <" + ucs2 + b"> Tj ET\n"
               b"BT /F1 12 Tf 72 680 Td (Pump controller PC-200: the supply voltage is 24 V DC.) Tj "
               b"0 -16 Td (Connect the motor to terminals U, V and W before switching the supply on.) Tj ET")
    return write_pdf([
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R /F2 6 0 R >> >> >>",
        stream(content),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Type /Font /Subtype /Type0 /BaseFont /STSong-Light /Encoding /UniGB-UCS2-H "
        b"/DescendantFonts [7 0 R] >>",
        b"<< /Type /Font /Subtype /CIDFontType0 /BaseFont /STSong-Light "
        b"/CIDSystemInfo << /Registry (Adobe) /Ordering (GB1) /Supplement 2 >> /FontDescriptor 8 0 R >>",
        b"<< /Type /FontDescriptor /FontName /STSong-Light /Flags 6 /FontBBox [-25 -254 1000 880] "
        b"/ItalicAngle 0 /Ascent 880 /Descent -120 /CapHeight 880 /StemV 93 >>",
    ])


@pytest.fixture(scope="module")
def server(sample_data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayServer]:
    if not is_current(DEST):
        pytest.fail(f"pdf.js {VERSION} is not vendored in {DEST}: run `make vendor`")
    work = tmp_path_factory.mktemp("viewer-fonts")
    pdf = work / "pc200_controller.pdf"
    pdf.write_bytes(cjk_manual())
    srv = GatewayServer(sample_data_dir, work)
    srv.cli("ingest", str(pdf))
    srv.start()
    yield srv
    srv.stop()


def test_a_cjk_font_without_embedding_is_read_with_the_vendored_cmaps(browser: Any, server: GatewayServer) -> None:
    manual = next(m for m in httpx.get(server.url + "/api/v1/manuals").json()["manuals"]
                  if m["file_name"] == "pc200_controller.pdf")
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        fetched: list[tuple[str, int]] = []
        page.on("response", lambda r: fetched.append((r.url, r.status)) if "/vendor/pdfjs/" in r.url else None)
        page.goto(f"{server.url}/viewer?{urlencode({'manual': manual['sha256'], 'q': 'supply voltage is 24 V'})}"
                  "#page=1")
        page.wait_for_function(RENDERED, timeout=60_000)
        assert page.evaluate("document.body.dataset.state") == "rendered"
        page.wait_for_function("document.querySelector('.textLayer') "
                               "&& document.querySelector('.textLayer').textContent.includes('supply voltage')")
        text = page.evaluate("document.querySelector('.textLayer').textContent")
        assert CJK in text, text  # the Chinese heading was decoded: its CMap was found
        cmaps = [(url, status) for url, status in fetched if "/cmaps/" in url]
        assert cmaps and all(status == 200 for _url, status in cmaps), fetched
        assert all(url.startswith(server.url) for url, _status in fetched)  # same origin, no CDN
    finally:
        context.close()
