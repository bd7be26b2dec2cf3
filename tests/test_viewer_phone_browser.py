"""The page viewer fits a phone (issue 48 item 4), in Debian's chromium on a 390x844 touch phone: the
page is as wide as the screen (no sideways scroll, of the page or inside its sheet), pinch-zoom is not
turned off (and the canvas is drawn sharp enough for it), and the page opens with the highlighted
sentence on screen, inside the 390 px: checked on a screenshot of what the phone shows.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.browser import WAIT_MS
from tests.support.server import SCRIPTED_PROFILE, GatewayServer
from tests.test_browser import SCRIPT
from tests.test_viewer import NOAA, NOAA_PAGE, NOAA_SENTENCE, PHONE, rendered, viewer_url
from ui.vendor_pdfjs import DEST, VERSION, is_current

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.timeout(600)]

# What the phone shows: the page box, the sheet, every highlight, and the viewport's meta.
ON_SCREEN = """() => {
  const box = (e) => { const r = e.getBoundingClientRect(); return {left: r.left, right: r.right, top: r.top,
                                                                   bottom: r.bottom, width: r.width}; };
  const sheet = document.getElementById('sheet'), bar = document.querySelector('.bar');
  return {page: box(document.getElementById('page')),
          marks: [...document.querySelectorAll('.textLayer .highlight')].map(box),
          text: [...document.querySelectorAll('.textLayer .highlight')].map((e) => e.textContent).join(' '),
          scrollWidth: document.scrollingElement.scrollWidth, sheet: [sheet.scrollWidth, sheet.clientWidth],
          barBottom: bar.getBoundingClientRect().bottom, width: innerWidth, height: innerHeight,
          canvas: document.getElementById('canvas').width,
          meta: document.querySelector('meta[name=viewport]').content};
}"""


@pytest.fixture(scope="module")
def server(sample_data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayServer]:
    if not is_current(DEST):
        pytest.fail(f"pdf.js {VERSION} is not vendored in {DEST}: run `make vendor`")
    srv = GatewayServer(sample_data_dir, tmp_path_factory.mktemp("viewer-phone"),
                        profile=SCRIPTED_PROFILE.format(script=SCRIPT, delay=0.0))
    srv.start()
    yield srv
    srv.stop()


def sha_of(server: GatewayServer, name: str) -> str:
    import httpx

    return next(m["sha256"] for m in httpx.get(server.url + "/api/v1/manuals").json()["manuals"]
                if m["file_name"] == name)


def yellow_pixels(png: bytes) -> int:
    """Pixels of the highlight's marker-pen yellow in a screenshot (decoded with the standard library)."""
    import struct
    import zlib

    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    at, idat, width, height, channels = 8, b"", 0, 0, 4
    while at < len(png):
        length, kind = struct.unpack(">I4s", png[at:at + 8])
        chunk = png[at + 8:at + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", chunk[:10])
            assert depth == 8 and colour in (2, 6), (depth, colour)
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += chunk
        at += 12 + length
    raw, stride = zlib.decompress(idat), width * channels
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b, c = prev[i], prev[i - channels] if i >= channels else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    n = 0
    for line in rows:
        for x in range(0, stride, channels):
            r, g, b = line[x], line[x + 1], line[x + 2]
            if r > 200 and 150 < g < 240 and b < 140:
                n += 1
    return n


def test_the_page_is_as_wide_as_the_phone_and_opens_on_the_highlight(browser: Any, server: GatewayServer) -> None:
    ctx = browser.new_context(**PHONE)
    try:
        pg = ctx.new_page()
        pg.set_default_timeout(WAIT_MS)
        pg.goto(viewer_url(server, sha_of(server, NOAA), NOAA_PAGE, NOAA_SENTENCE))
        shown = rendered(pg)
        assert shown["state"] == "rendered" and shown["highlighted"], shown
        seen = pg.evaluate(ON_SCREEN)
        # page width = screen width: no sideways scroll of the page, nor inside its sheet
        assert seen["scrollWidth"] <= 390, seen
        assert seen["sheet"][0] <= seen["sheet"][1], seen
        assert 350 <= seen["page"]["width"] <= 390 and seen["page"]["left"] >= 0 and seen["page"]["right"] <= 390, seen
        # pinch to zoom is left on, and the canvas is sharp for a 2x pinch on a 3x screen
        assert "user-scalable=no" not in seen["meta"].replace(" ", "") and "maximum-scale=1" not in seen["meta"]
        assert seen["canvas"] >= 5 * seen["page"]["width"], seen
        # the highlighted sentence is on screen, within the 390 px, below the sticky bar
        assert "round shaped pcb" in seen["text"], seen["text"]
        for m in seen["marks"]:
            assert m["left"] >= 0 and m["right"] <= 390, m
            assert m["top"] >= seen["barBottom"] - 1 and m["bottom"] <= seen["height"], (m, seen["barBottom"])
        # ... and on the screenshot: the marker yellow is drawn inside the phone's screen
        first = seen["marks"][0]
        clip = {"x": 0, "y": first["top"], "width": 390, "height": max(4, first["bottom"] - first["top"])}
        assert yellow_pixels(pg.screenshot(clip=clip)) > 50
        assert yellow_pixels(pg.screenshot()) > 200
    finally:
        ctx.close()
