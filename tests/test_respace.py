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
from retrieval.manifest_schema import decode_manifest
from tests.support.pdfs import glued_content, glued_pdf, pages_pdf, text_page

SENTENCES = [
    "Am besten stellt man in der Oszilloskop Konfiguration eine Samplingzeit von zwei Mikrosekunden ein",
    "Danach beginnt die eigentliche Datennahme mit dem Start der grafischen Oberfläche des Puffermanagers",
    "Die Schwellen des Pulsfilters werden in der Konfigurationsdatei des Pulsfilters festgelegt",
    "Ungesicherte Daten und Einstellungen gehen beim Neustart des Moduls verloren",
]
OTHER_PAGE = "Die Bedienoberfläche zeigt die Messwerte der angeschlossenen Detektoren in Echtzeit an " * 4
NEEDS_POPPLER = pytest.mark.skipif(shutil.which("pdftotext") is None,
                                   reason="poppler-utils (pdftotext) is not installed; make install puts it there")


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
    assert respace_pages(Path("x.pdf"), pages, normalise_text, reader(OTHER_PAGE))[1] == []
    # a reading with other letters is not taken whole, but the runs it spells letter for letter are spaced
    by_sentence = ". ".join("".join(x.split()) for x in SENTENCES)
    out, replaced = respace_pages(Path("x.pdf"), [(1, by_sentence)], normalise_text, reader(". ".join(SENTENCES[:2])))
    assert replaced == [1] and out[0][1].startswith(". ".join(SENTENCES[:2]))
    assert out[0][1].endswith("".join(SENTENCES[3].split()))
    assert respace_pages(Path("x.pdf"), pages, normalise_text, reader(None)) == (pages, [])
    # past the time budget no page is read again (a hostile PDF cannot hold the parse for hours)
    calls.clear()
    assert respace_pages(Path("x.pdf"), pages, normalise_text, reader(spaced), budget_s=0.0) == (pages, [])
    assert calls == []


def test_a_page_with_a_few_glued_lines_keeps_its_reading_with_those_lines_spaced() -> None:
    """eval/de-dev3's wordclock Anleitung glues a line here and there (under GLUED_SHARE of the page), in a
    table whose rows pypdf keeps together and poppler reads column by column: only the glued runs take
    poppler's spaces; a compound poppler reads as one word stays one; a run poppler spells otherwise stays."""
    rows = ["Web-Frontend ist nicht erreichbar Prüfen, ob sich Gerät und Uhr", "im gleichen Netzwerk befinden. Die",
            "beim Start angezeigte IP-Adresse verwenden und bei OTA-Updates den Port ergänzen."]
    body = " ".join(SENTENCES[1:] * 5)
    table = "\n".join(rows) + "\nDie Traktionsbatteriezellblocktemperatur wird angezeigt. " + body
    page = table.replace("im gleichen Netzwerk befinden", "imgleichenNetzwerkbefinden")
    page += " Mehrsprachigkeitsunterstützungsmodul"
    assert 0.0 < glued_share(page) < GLUED_SHARE
    poppler = (" ".join(rows[::-1]) + " Die Traktionsbatteriezellblocktemperatur wird angezeigt. "
               + body + " Mehrsprachigkeits unterstützungs modul")  # columns in another order
    seen: list[int] = []

    def read(_path: Path, number: int) -> str | None:
        seen.append(number)
        return poppler

    out, replaced = respace_pages(Path("x.pdf"), [(1, page), (2, " ".join(SENTENCES))], normalise_text, read)
    assert replaced == [1] and seen == [1]  # the ordinary page is not read again
    text = out[0][1]
    assert "im gleichen Netzwerk befinden. Die\nbeim Start" in text  # pypdf's rows kept, the run spaced
    assert "Traktionsbatteriezellblocktemperatur" in text  # read as one word by both: one word
    assert "Mehrsprachigkeitsunterstützungsmodul" not in text  # poppler spaced it: as poppler reads it
    assert text.startswith(rows[0])
    # a reading that does not hold the run letter for letter leaves the page as pypdf read it
    assert respace_pages(Path("x.pdf"), [(1, page)], normalise_text, lambda _p, _n: OTHER_PAGE) == ([(1, page)], [])


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


@NEEDS_POPPLER
def test_the_index_records_which_pages_were_read_again(tmp_path: Path, embedder: Any) -> None:
    """The version's manifest names the pages pdftotext re-spaced, per manual, as it names OCR'd and unread
    pages, and a later version that re-uses the manual keeps them; a manual of ordinary text records none.
    (Before, the page numbers went to the ingest log only.)"""
    from gateway.web.routes_manuals import _manuals

    lines = b" ".join(b"(" + s.encode("cp1252") + b") '" for s in SENTENCES)
    spaced = b"BT /F1 11 Tf 20 TL 40 720 Td " + lines + b" ET"  # the same lines with their spaces
    glued = tmp_path / "pulsfilter_anleitung.pdf"
    glued.write_bytes(pages_pdf([spaced, glued_content(SENTENCES), spaced]))  # page 2 of 3 glued
    plain = tmp_path / "spindle_notes.pdf"
    plain.write_bytes(text_page(["Spindle notes", "Grease the spindle bearings every 500 hours of running."]))

    gw = Services(Settings(data_dir=tmp_path / "data"), embedder=embedder)
    try:
        gw.ingest([glued])
        (entry,) = gw.store.open().manifest["manuals"]
        assert entry["page_count"] == 3 and entry["respaced"] == [2]

        report = gw.ingest([plain])  # a new version: the glued manual is re-used, not parsed again
        assert report.added == ["spindle_notes.pdf"] and report.unchanged == [], report
        version = gw.store.open()
        entries = {m["file_name"]: m for m in version.manifest["manuals"]}
        assert entries["pulsfilter_anleitung.pdf"]["respaced"] == [2]
        assert "respaced" not in entries["spindle_notes.pdf"]  # only when there are any, as "unread"
        typed = {m.file_name: m.respaced for m in decode_manifest(version.manifest).manuals}
        assert typed == {"pulsfilter_anleitung.pdf": [2], "spindle_notes.pdf": []}
        # GET /api/v1/manuals shows them beside the OCR'd pages
        assert {m["file_name"]: m["respaced_pages"] for m in _manuals(gw)} == typed
    finally:
        gw.log.close()


def test_a_manifest_written_before_respaced_still_loads() -> None:
    """Versions built before the field read as no page re-spaced."""
    manual = {"sha256": "0" * 64, "file_name": "old.pdf", "title": "Old", "page_count": 2}
    assert decode_manifest({"manuals": [manual]}).manuals[0].respaced == []


@NEEDS_POPPLER
def test_a_glued_cover_gives_its_title_with_its_spaces(tmp_path: Path) -> None:
    """The title is the cover's largest text, read from pypdf's runs, which are glued as the page is:
    eval/de-dev's picoCosmo tutorial was titled "Tutorialzu picoCosmo" on every citation. Its cover read
    again by pdftotext spells it with its spaces."""
    title = b"BT /F1 24 Tf 40 750 Td [(Tutorial) -120 (zum) -120 (Pulsfilter)] TJ ET "
    cover = tmp_path / "pulsfilter_tutorial.pdf"
    cover.write_bytes(pages_pdf([title + glued_content(SENTENCES), glued_content(SENTENCES[:2])]))
    parsed = extract(cover, 50)
    assert 1 in parsed["respaced"]
    assert parsed["title"] == "Tutorial zum Pulsfilter", parsed["title"]
