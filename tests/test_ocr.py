"""OCR of scanned pages (issue 26), with the real programs: poppler's pdftoppm renders a page of known
text, bench.scans makes it an image-only page, and ingest reads it back with Tesseract inside the
sandboxed parse worker. The text is found by search and cited as OCR; a hostile page image (huge,
corrupt) fails alone with a clear message while the rest of the manual is ingested; ingest.ocr = "off"
and a gateway without Tesseract leave the page unread and say so; a number OCR was unsure of backs no
claim.
"""

from __future__ import annotations

import os
import shutil
import zlib
from pathlib import Path
from typing import Any

import pytest

from ingest.models import ChunkParams, IngestError, ParseLimits
from ingest.ocr import unread_notes
from tests.support.pdfs import image_xobject, scanned_pdf, text_page

pytestmark = pytest.mark.timeout(300)

if not shutil.which("tesseract") or not shutil.which("pdftoppm"):
    pytest.fail("OCR tests need Debian's tesseract-ocr, tesseract-ocr-eng and poppler-utils "
                "(make test installs them)", pytrace=False)

SCAN_LINES = [
    "Coolant pump service",
    "Replace the impeller seal every 2000 hours of running.",
    "Tighten the pump housing bolts to 85 N m in a cross pattern.",
    "The flow sensor shows alarm code E47 when the intake filter is blocked.",
]
TEXT_LINES = ["Coolant pump overview", "The coolant pump moves water from the sump to the spindle nozzle."]
DPI = 150


def scanned(folder: Path, name: str, pages: list[list[str]], hostile: dict[int, bytes] | None = None) -> Path:
    return scanned_pdf(folder, name, pages, hostile, dpi=DPI)


def mixed_manual(folder: Path, hostile: bytes) -> Path:
    """Page 1 born digital, page 2 a scan of SCAN_LINES, page 3 a scan whose image is hostile."""
    from pypdf import PdfReader, PdfWriter

    scan = scanned(folder, ".scan.pdf", [SCAN_LINES, ["Blank"]], hostile={1: hostile})
    first = folder / ".text.pdf"
    first.write_bytes(text_page(TEXT_LINES))
    writer = PdfWriter()
    for part in (first, scan):
        for page in PdfReader(str(part)).pages:
            writer.add_page(page)
    path = folder / "coolant_pump_manual.pdf"
    with path.open("wb") as fh:
        writer.write(fh)
    return path


HUGE = image_xobject(200_000, 200_000, zlib.compress(b"\x00" * 100_000))
CORRUPT = image_xobject(1275, 1650, b"\x78\x9c" + bytes(range(256)) * 40)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("ocr")


@pytest.fixture(scope="module")
def manual(folder: Path) -> Path:
    return mixed_manual(folder, HUGE)


@pytest.fixture(scope="module")
def ingested(folder: Path, manual: Path, embedder: Any) -> tuple[Any, Any]:
    """(IndexStore, IngestReport) of the mixed manual ingested with the default settings."""
    from retrieval.versions import IndexStore

    store = IndexStore(folder / "data")
    report = store.ingest([manual], embedder, ChunkParams(), ParseLimits())
    return store, report


def words_of(text: str) -> set[str]:
    return {w.strip(".,").lower() for w in text.split() if len(w.strip(".,")) > 2}


def test_scanned_page_is_found_by_search_and_cited_as_ocr(ingested: tuple[Any, Any], embedder: Any) -> None:
    from retrieval.search import search
    from retrieval.types import SearchParams

    store, report = ingested
    assert report.version and report.added == ["coolant_pump_manual.pdf"], report
    hits = search(store, embedder, "How often is the impeller seal replaced?", SearchParams(k=3))
    top = hits[0]
    assert top.page == 2 and top.source == "ocr", [(h.page, h.source, h.text[:40]) for h in hits]
    assert "impeller seal every 2000 hours" in top.text
    assert top.ocr_confidence is not None and 60 <= top.ocr_confidence <= 100
    # the born-digital page is text-layer text
    text_hits = [h for h in search(store, embedder, "sump spindle nozzle water", SearchParams(k=3)) if h.page == 1]
    assert text_hits and text_hits[0].source == "text" and text_hits[0].ocr_confidence is None
    # the words keep their boxes, in reading order, inside the page
    version = store.open()
    sha = version.manifest["manuals"][0]["sha256"]
    page = version.chunks.ocr_page(sha, 2)
    text = version.chunks.page_text(sha, 2)
    assert page is not None and text
    read = [text[int(w[5]):int(w[6])] for w in page.words]
    assert "impeller" in read and "E47" in read
    boxes = {text[int(w[5]):int(w[6])]: w[:4] for w in page.words}
    assert all(0 <= x0 < x1 <= 1 and 0 <= y0 < y1 <= 1 for x0, y0, x1, y1 in boxes.values())
    assert boxes["impeller"][1] < boxes["E47"][1]  # line 2 above line 4
    assert version.chunks.ocr_page(sha, 1) is None


def test_doubtful_ocr_text_ranks_at_half_its_score(ingested: tuple[Any, Any], embedder: Any) -> None:
    """search.ocr_doubt: OCR read less surely than the bar (a schematic's noise) is ranked like a
    contents page, at half its fused score; text read surely, and text-layer text, keep theirs."""
    from ingest.models import OCR_MIN_CONFIDENCE
    from retrieval.search import search
    from retrieval.types import SearchParams

    assert SearchParams().ocr_doubt == OCR_MIN_CONFIDENCE == ParseLimits().ocr_min_confidence
    store, _report = ingested
    question = "How often is the impeller seal replaced?"
    plain = search(store, embedder, question, SearchParams(k=3, ocr_doubt=0.0))
    top = plain[0]
    assert top.source == "ocr" and top.ocr_confidence is not None
    sure = search(store, embedder, question, SearchParams(k=3, ocr_doubt=top.ocr_confidence - 1))
    assert sure[0].chunk_id == top.chunk_id and sure[0].score == pytest.approx(top.score)
    doubted = {h.chunk_id: h
               for h in search(store, embedder, question, SearchParams(k=3, ocr_doubt=top.ocr_confidence + 1))}
    assert doubted[top.chunk_id].score == pytest.approx(top.score / 2)
    text = [h for h in plain if h.source == "text"]
    assert text and all(doubted[h.chunk_id].score == pytest.approx(h.score) for h in text if h.chunk_id in doubted)


def test_hostile_page_image_fails_alone_with_a_clear_message(ingested: tuple[Any, Any], folder: Path) -> None:
    from ingest.sandbox import parse_pdf

    store, report = ingested
    entry = store.open().manifest["manuals"][0]
    assert list(entry["unread"]) == ["3"] and "200,000 x 200,000 pixels, too large" in entry["unread"]["3"]
    assert [(f, m) for f, m in report.unread] == [
        (str(folder / "coolant_pump_manual.pdf"), f"could not read 1 page (3): {entry['unread']['3']}")]
    assert entry["ocr"]["pages"] == [2] and entry["ocr"]["engine"].startswith("tesseract")
    # a corrupt image stream: the same, with what the renderer said
    (folder / "corrupt").mkdir()
    corrupt = parse_pdf(mixed_manual(folder / "corrupt", CORRUPT))
    assert corrupt.pages_without_text == [3] and sorted(corrupt.ocr) == [2]
    assert corrupt.unread[3].startswith("OCR failed: the page image is damaged")


def test_manifest_records_how_pages_were_read(ingested: tuple[Any, Any]) -> None:
    import subprocess

    store, _report = ingested
    manifest = store.open().manifest
    version = subprocess.run(["tesseract", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    assert manifest["ocr"] == {**ParseLimits().ocr_settings(), "tesseract": version.strip()}


def test_ocr_off_leaves_the_page_unread_and_says_so(folder: Path, manual: Path) -> None:
    from ingest.sandbox import parse_pdf

    parsed = parse_pdf(manual, ParseLimits(ocr="off"))
    assert parsed.pages_without_text == [2, 3] and not parsed.ocr
    assert unread_notes(parsed.unread) == ["could not read 2 pages (2, 3): no text layer, and OCR is off (ingest.ocr)"]
    whole_scan = scanned(folder, "scan_only.pdf", [SCAN_LINES])
    with pytest.raises(IngestError, match=r"could not read any of its 1 pages: no text layer, and OCR is off"):
        parse_pdf(whole_scan, ParseLimits(ocr="off"))


def test_without_tesseract_pages_are_reported_not_crashed(folder: Path, manual: Path, embedder: Any,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from ingest.sandbox import parse_pdf
    from retrieval.versions import IndexStore

    bin_dir = folder / "bin-without-tesseract"
    bin_dir.mkdir()
    for name in ("pdftoppm", "pdfimages"):
        os.symlink(shutil.which(name) or name, bin_dir / name)
    monkeypatch.setenv("PATH", str(bin_dir))
    report = IndexStore(folder / "data-no-tesseract").ingest([manual], embedder, ChunkParams(), ParseLimits())
    assert report.version and report.added == ["coolant_pump_manual.pdf"]
    (file, note), = [u for u in report.unread if "page (2" in u[1] or "pages (2" in u[1]]
    assert note.startswith("could not read 2 pages (2, 3): tesseract is not installed: install tesseract-ocr")
    with pytest.raises(IngestError, match=r"scan_only_2.pdf: could not read any of its 1 pages: tesseract is not "
                                          r"installed: install tesseract-ocr"):
        parse_pdf(scanned(folder, "scan_only_2.pdf", [SCAN_LINES]), ParseLimits())


def test_numbers_of_doubtful_ocr_words_back_no_claim() -> None:
    from gateway.answer.extractive import pick_sentences
    from gateway.answer.ocr_text import support_text
    from gateway.answer.support import check_answer
    from retrieval.types import Hit

    text = "Tighten the pump housing bolts to 85 N m in a cross pattern. Use a torque wrench on the housing bolts."
    at = text.index("85")

    def hit(doubtful: list[list[int]] | None) -> Hit:
        return Hit(chunk_id="c", manual="m.pdf", title="Coolant pump", manual_sha256="0" * 64, page=2,
                   heading="Coolant pump service", text=text, score=1.0, dense_rank=1, lexical_rank=1,
                   dense_score=0.8, source="ocr", ocr_confidence=70.0, ocr_doubtful=doubtful)

    claim = "Tighten the pump housing bolts to 85 N m in a cross pattern [1]."
    sure, unsure = hit([]), hit([[at, at + 2]])
    assert support_text(unsure) == text.replace("85", "##")
    assert check_answer(claim, [support_text(sure)])[0].supported
    assert not check_answer(claim, [support_text(unsure)])[0].supported
    # the extractive answer does not quote the sentence whose number OCR was unsure of
    question = "What torque for the pump housing bolts?"
    assert any("85" in sentence for _n, sentence in pick_sentences(question, [sure]))
    picked = pick_sentences(question, [unsure])
    assert picked and not any("85" in sentence for _n, sentence in picked)


def test_ocr_settings_are_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    from gateway.config import ConfigError, load_settings

    settings = load_settings(env={"MANUALQA_INGEST__OCR": "always", "MANUALQA_INGEST__OCR_LANGUAGES": "eng,deu",
                                  "MANUALQA_INGEST__OCR_PAGE_TIMEOUT_S": "30"})
    assert settings.ingest.ocr == "always" and settings.ingest.ocr_languages == ("eng", "deu")
    assert settings.ingest.ocr_page_timeout_s == 30.0
    with pytest.raises(ConfigError, match="ocr must be"):
        load_settings(env={"MANUALQA_INGEST__OCR": "sometimes"})
    with pytest.raises(ConfigError, match="ocr_languages"):
        load_settings(env={"MANUALQA_INGEST__OCR_LANGUAGES": "eng;rm -rf"})


def test_a_later_version_keeps_what_ocr_read(ingested: tuple[Any, Any], folder: Path, embedder: Any) -> None:
    """Another manual ingested next re-uses the scanned one: its OCR chunks, words and reasons stay."""
    from retrieval.search import search
    from retrieval.types import SearchParams

    store, _report = ingested
    before = store.open().manifest["manuals"][0]
    other = folder / "spindle_notes.pdf"
    other.write_bytes(text_page(["Spindle notes", "Grease the spindle bearings every 500 hours of running."]))
    report = store.ingest([other], embedder, ChunkParams(), ParseLimits())
    assert report.version and report.unchanged == [] and report.added == ["spindle_notes.pdf"], report
    version = store.open()
    kept = next(m for m in version.manifest["manuals"] if m["file_name"] == "coolant_pump_manual.pdf")
    assert kept["ocr"] == before["ocr"] and kept["unread"] == before["unread"]
    hit = search(store, embedder, "How often is the impeller seal replaced?", SearchParams(k=1))[0]
    assert (hit.page, hit.source) == (2, "ocr") and hit.ocr_confidence
    assert version.chunks.ocr_page(kept["sha256"], 2) is not None


def test_a_page_over_its_cpu_limit_is_stopped(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The per-page limit counts CPU-seconds of pdftoppm and tesseract (a busy box is no reason to fail).

    Read in this process (ingest.pdf.extract, what the parse worker runs) so that the programs' wall-clock
    backstop, 10 x their 1 CPU-second, can be moved out of the way: in the nice-10 worker beside busy
    processes they may get a tenth of a core, and then the backstop raced the CPU limit."""
    from ingest import ocr_tools
    from ingest.pdf import extract

    monkeypatch.setattr(ocr_tools, "WALL_FACTOR", 600)
    limits = ParseLimits(ocr_page_timeout_s=0.5, ocr_dpi=600)
    scan = scanned(folder, "scan_slow.pdf", [SCAN_LINES])
    with pytest.raises(IngestError, match=r"OCR failed: .* used more than 1 s of CPU time on the page and was "
                                          r"stopped \(ingest.ocr_page_timeout_s\)"):
        extract(scan, limits.max_pages, ocr={"mode": limits.ocr, "languages": list(limits.ocr_languages),
                                             "dpi": limits.ocr_dpi, "timeout_s": limits.ocr_page_timeout_s})
