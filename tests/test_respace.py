"""Pages whose text layer glues its words together are read again by poppler (ingest.respace, issue 47).

The PDFs here set each word with a small kerning step ([(Am) -120 (besten) ...] TJ) instead of a space,
as the picoCosmo Anleitung of eval/de-dev does: pypdf reads "AmbestenstelltmaninderOszilloskop...", poppler
"Am besten stellt man in der Oszilloskop ...". On today's main such a manual is indexed glued, and a
search for one of its words finds nothing by that word.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from gateway.config import Settings
from gateway.services import Services
from ingest.pdf import extract, normalise_text
from ingest.respace import GLUED_SHARE, glued_share, respace_pages
from tests.support.pdfs import tiny_pdf

SENTENCES = [
    "Am besten stellt man in der Oszilloskop Konfiguration eine Samplingzeit von zwei Mikrosekunden ein",
    "Danach beginnt die eigentliche Datennahme mit dem Start der grafischen Oberfläche des Puffermanagers",
    "Die Schwellen des Pulsfilters werden in der Konfigurationsdatei des Pulsfilters festgelegt",
    "Ungesicherte Daten und Einstellungen gehen beim Neustart des Moduls verloren",
]
NEEDS_POPPLER = pytest.mark.skipif(shutil.which("pdftotext") is None,
                                   reason="poppler-utils (pdftotext) is not installed; make install puts it there")


def glued_pdf(sentences: list[str], step: int = -120) -> bytes:
    """One page, each sentence a line whose words are set apart by a kerning step, never by a space."""
    lines = []
    for n, sentence in enumerate(sentences):
        words = b" ".join(b"(" + w.encode("cp1252") + b") %d" % step for w in sentence.split())
        lines.append(b"BT /F1 11 Tf 40 %d Td [" % (700 - 20 * n) + words + b"] TJ ET ")
    return tiny_pdf(b"".join(lines))


def test_glued_share_tells_glued_pages_from_long_compounds() -> None:
    glued = normalise_text("".join(SENTENCES[0].split()) + " " + "".join(SENTENCES[1].split()) * 2)
    assert glued_share(glued) >= GLUED_SHARE
    prose = " ".join(SENTENCES * 3) + " Traktionsbatteriezellblocktemperatur"
    assert glued_share(prose) < GLUED_SHARE
    # Chinese runs on without spaces by nature: never glued (nor are its Latin words beside it)
    chinese = "本驱动器的输入电压范围为十二伏至二十四伏请勿超过二十四伏否则会损坏驱动器内部的功率器件 FPGA 开发板" * 20
    assert glued_share(chinese) == 0.0


def test_a_reading_is_kept_only_when_it_holds_the_same_letters_unglued() -> None:
    glued = "".join(" ".join(SENTENCES).split()) * 2
    spaced = " ".join(SENTENCES) + " " + " ".join(SENTENCES)
    calls: list[int] = []

    def reader(text: str | None) -> Any:
        def read(_path: Path, page: int) -> str | None:
            calls.append(page)
            return text
        return read

    pages = [(1, glued), (2, " ".join(SENTENCES) * 2)]
    out, replaced = respace_pages(Path("x.pdf"), pages, normalise_text, reader(spaced))
    assert replaced == [1] and out[0][1] == normalise_text(spaced) and out[1] == pages[1]
    assert calls == [1]  # an ordinary page is never read again
    # another text (a different page, a failed read) or no pdftotext: the page stays as it was
    assert respace_pages(Path("x.pdf"), pages, normalise_text, reader(spaced[: len(spaced) // 2]))[1] == []
    assert respace_pages(Path("x.pdf"), pages, normalise_text, reader(None)) == (pages, [])
    # past the time budget no page is read again (a hostile PDF cannot hold the parse for hours)
    calls.clear()
    assert respace_pages(Path("x.pdf"), pages, normalise_text, reader(spaced), budget_s=0.0) == (pages, [])
    assert calls == []


@NEEDS_POPPLER
def test_a_glued_manual_is_indexed_with_its_words(tmp_path: Path, embedder: Any) -> None:
    pdf = tmp_path / "pulsfilter_anleitung.pdf"
    pdf.write_bytes(glued_pdf(SENTENCES))
    text = extract(pdf, 10)["pages"][0][1]
    assert "Samplingzeit von zwei Mikrosekunden" in text and "Oszilloskop Konfiguration" in text

    gw = Services(Settings(data_dir=tmp_path / "data"), embedder=embedder)
    try:
        gw.ingest([pdf])
        hits = gw.search("Samplingzeit", k=3)
        assert hits and hits[0].lexical_rank == 1 and "eine Samplingzeit von" in hits[0].text
    finally:
        gw.log.close()
