"""Sandboxed PDF parsing on the real sample manuals and on broken, hostile and odd files made here."""

from __future__ import annotations

import hashlib
import random
from io import BytesIO
from pathlib import Path

import pytest
from pypdf import PdfReader, PdfWriter

from ingest import IngestError, ParsedManual, ParseLimits, find_pdfs, parse_many, parse_pdf, sha256_file
from ingest.pdf import normalise_text
from ingest.titles import choose_title, is_generic_title, meaningful_title
from tests.support.pdfs import tiny_pdf

SAMPLES = Path(__file__).resolve().parent.parent / "sample_manuals"
NOAA = SAMPLES / "noaa_lcp_pistonboard_user_manual.pdf"
VORON = SAMPLES / "voron0_setup_guide.pdf"


@pytest.fixture(scope="module")
def samples() -> dict[str, ParsedManual]:
    return {path.name: parse_pdf(path, ParseLimits()) for path in (NOAA, VORON)}


def expect_error(path: Path, limits: ParseLimits, *fragments: str) -> str:
    with pytest.raises(IngestError) as info:
        parse_pdf(path, limits)
    message = str(info.value)
    assert message.startswith(f"{path.name}: "), message
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, message
    return message


# --- real manuals -------------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "pages"), [(NOAA.name, 21), (VORON.name, 18)])
def test_sample_manual_parses(samples: dict[str, ParsedManual], name: str, pages: int) -> None:
    parsed = samples[name]
    path = SAMPLES / name
    assert parsed.page_count == pages
    assert [p.number for p in parsed.pages] == list(range(1, pages + 1))
    assert parsed.file_name == name
    assert parsed.size_bytes == path.stat().st_size
    assert parsed.sha256 == hashlib.sha256(path.read_bytes()).hexdigest() == sha256_file(path)
    assert parsed.title.strip() and parsed.title != path.stem
    assert set(parsed.pages_without_text) <= set(range(1, pages + 1))
    assert len(parsed.pages_without_text) < pages / 2
    for page in parsed.pages:
        assert "  " not in page.text and "\t" not in page.text
        assert not page.text.startswith((" ", "\n")) and not page.text.endswith((" ", "\n"))


def test_titles_come_from_the_cover_page(samples: dict[str, ParsedManual]) -> None:
    # Neither sample has a /Title in its metadata; the title is the cover page's large text.
    assert "Low Cost Profiler" in samples[NOAA.name].title
    assert "SKR Mini E3" in samples[VORON.name].title


def test_ligatures_are_unfolded(samples: dict[str, ParsedManual]) -> None:
    text = "\n".join(p.text for p in samples[VORON.name].pages)
    assert not any(ch in text for ch in "\ufb00\ufb01\ufb02\ufb03\ufb04")
    assert "Configuration" in text  # printed with an "ﬁ" ligature in the PDF


def test_normalise_text_joins_hyphenated_words_and_keeps_lines() -> None:
    raw = "Connect the inter-\nface cable  to\tJ1.\nSee Piston-\nBoard notes\u00a0here.\n\n\n\nNext"
    assert normalise_text(raw) == "Connect the interface\ncable to J1.\nSee Piston-\nBoard notes here.\n\nNext"
    assert normalise_text("1. Introduction.......................4") == "1. Introduction ... 4"


def test_meaningless_metadata_titles_are_ignored() -> None:
    for bad in ("", "  ", "untitled", "Untitled-1", "Microsoft Word - pump_manual_v3.docx", "scan0001.pdf"):
        assert meaningful_title(bad) == "", bad
    assert meaningful_title("  XR-200 Pump\nService Manual ") == "XR-200 Pump Service Manual"
    assert choose_title("Microsoft Word - x.docx", "", "4\nXR-200 Service Manual\nRev. B", "xr200") == \
        "XR-200 Service Manual"
    assert choose_title(None, "", "", "xr200_manual") == "xr200 manual"


def test_metadata_title_wins_when_meaningful(tmp_path: Path) -> None:
    writer = PdfWriter(clone_from=str(VORON))
    writer.add_metadata({"/Title": "Voron 0 Electronics Setup"})
    good = tmp_path / "titled.pdf"
    writer.write(str(good))
    writer.add_metadata({"/Title": "Microsoft Word - V0_Setup_Guide.docx"})
    junk = tmp_path / "junk_title.pdf"
    writer.write(str(junk))
    assert parse_pdf(good, ParseLimits()).title == "Voron 0 Electronics Setup"
    assert "SKR Mini E3" in parse_pdf(junk, ParseLimits()).title


def _titled_pdf(path: Path, meta_title: str | None, heading: str | None) -> Path:
    """A one-page manual: `heading` in 24 pt (if any) over body text in 10 pt, `meta_title` as /Title."""
    body = b"BT /F1 10 Tf 72 640 Td (Read every safety note before the pump is connected to mains power.) Tj ET"
    top = b"BT /F1 24 Tf 72 700 Td (" + heading.encode() + b") Tj ET\n" if heading else b""
    writer = PdfWriter(clone_from=PdfReader(BytesIO(tiny_pdf(top + body))))
    if meta_title is not None:
        writer.add_metadata({"/Title": meta_title})
    writer.write(str(path))
    return path


@pytest.mark.parametrize("generic", ["User Manual", "Manual", "USER'S MANUAL", "Operating Instructions",
                                     "Document", "pump_manual_v3"])
def test_a_generic_metadata_title_gives_way_to_the_first_page_heading(tmp_path: Path, generic: str) -> None:
    parsed = parse_pdf(_titled_pdf(tmp_path / "p.pdf", generic, "Acme XR-200 Dosing Pump"), ParseLimits())
    assert parsed.title == "Acme XR-200 Dosing Pump"
    assert parsed.pdf_title in (generic, "")  # the PDF's own, kept as it says it ("" when it says nothing)


def test_a_generic_title_and_no_heading_give_the_file_name_as_words(tmp_path: Path) -> None:
    parsed = parse_pdf(_titled_pdf(tmp_path / "acme_xr-200_dosing-pump.pdf", "User Manual", None), ParseLimits())
    assert parsed.title == "acme xr-200 dosing-pump" and parsed.pdf_title == "User Manual"
    parsed = parse_pdf(_titled_pdf(tmp_path / "acme-dosing-pump.pdf", "Manual", None), ParseLimits())
    assert parsed.title == "acme dosing pump"


def test_a_good_metadata_title_is_kept(tmp_path: Path) -> None:
    parsed = parse_pdf(_titled_pdf(tmp_path / "p.pdf", "Acme XR-200 Dosing Pump Service Manual", "Contents"),
                       ParseLimits())
    assert parsed.title == parsed.pdf_title == "Acme XR-200 Dosing Pump Service Manual"


def test_generic_titles_name_no_equipment() -> None:
    for generic in ("User Manual", "Owner\u2019s Manual", "Quick Start Guide", "User Guide - English",
                    "Installation and Operation Manual", "Service Manual v2.1", "XR200-SM-EN-rev4", "DOC-00123"):
        assert is_generic_title(generic), generic
    for named in ("XR-200 Pump Service Manual", "ESP32", "Manual Transfer Switch", "SKR Mini E3 V3.0 User Manual"):
        assert not is_generic_title(named), named
    # a cover that says "USER MANUAL" largest, the model above it
    assert choose_title("User Manual", "USER MANUAL", "ACME XR-200\nUSER MANUAL\nRev. B", "x") == \
        "ACME XR-200 USER MANUAL"


def test_owner_password_only_pdf_is_readable(tmp_path: Path) -> None:
    # Many vendor manuals carry print/copy restrictions with an empty user password: not an error.
    writer = PdfWriter(clone_from=str(VORON))
    writer.encrypt(user_password="", owner_password="vendor", algorithm="AES-128")
    path = tmp_path / "restricted.pdf"
    writer.write(str(path))
    parsed = parse_pdf(path, ParseLimits())
    assert parsed.page_count == 18 and "Configuration" in parsed.pages[2].text


def test_image_only_pages_are_listed_not_fatal(tmp_path: Path) -> None:
    writer = PdfWriter()
    writer.append(str(NOAA), pages=[4, 5])
    writer.add_blank_page(width=612, height=792)
    path = tmp_path / "mixed.pdf"
    writer.write(str(path))
    parsed = parse_pdf(path, ParseLimits())
    assert parsed.page_count == 3 and parsed.pages_without_text == [3]
    assert "Introduction" in parsed.pages[0].text and parsed.pages[2].text.strip() == ""


# --- bad input: every failure is one clear line that names the file -----------------------------

def test_truncated_manual(tmp_path: Path) -> None:
    data = NOAA.read_bytes()
    path = tmp_path / "truncated.pdf"
    path.write_bytes(data[: int(len(data) * 0.4)])
    expect_error(path, ParseLimits(), "truncated")


def test_password_protected(tmp_path: Path) -> None:
    writer = PdfWriter(clone_from=str(NOAA))
    writer.encrypt(user_password="secret", owner_password="owner", algorithm="AES-256")
    path = tmp_path / "locked.pdf"
    writer.write(str(path))
    expect_error(path, ParseLimits(), "password protected")


def test_random_bytes(tmp_path: Path) -> None:
    path = tmp_path / "random.pdf"
    path.write_bytes(random.Random(7).randbytes(50_000))
    expect_error(path, ParseLimits(), "not a PDF")


def test_zero_byte_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.pdf"
    path.write_bytes(b"")
    expect_error(path, ParseLimits(), "empty file")


def test_pdf_header_with_garbage_body(tmp_path: Path) -> None:
    path = tmp_path / "garbage.pdf"
    path.write_bytes(b"%PDF-1.7\n" + random.Random(3).randbytes(20_000) + b"\n%%EOF\n")
    expect_error(path, ParseLimits(), "malformed")


def test_missing_file_and_folder(tmp_path: Path) -> None:
    expect_error(tmp_path / "nope.pdf", ParseLimits(), "no such file")
    folder = tmp_path / "folder.pdf"
    folder.mkdir()
    expect_error(folder, ParseLimits(), "not a regular file")


def test_no_text_layer_anywhere(tmp_path: Path) -> None:
    path = tmp_path / "scan.pdf"
    path.write_bytes(tiny_pdf(b"0 0 1 rg 100 100 300 400 re f"))  # one drawn rectangle, no text
    # OCR (issue 26) reads the page image too, and finds nothing there either
    expect_error(path, ParseLimits(), "could not read any of its 1 pages", "OCR found no text")


def test_too_many_pages(tmp_path: Path) -> None:
    expect_error(NOAA, ParseLimits(max_pages=5), "21 pages", "5-page limit")


def test_file_too_large() -> None:
    expect_error(VORON, ParseLimits(max_file_mb=1), "MB limit")


def test_timeout_kills_a_slow_parse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # 70 MB of blanks in one content stream: within pypdf's limits, but seconds of parsing.
    # The wall-clock backstop (20 x 1 s) is raised out of the way: the nice-10 worker beside busy
    # processes may get a tenth of a core, and then 1 s of CPU takes about as long as the backstop.
    monkeypatch.setattr("ingest.sandbox.WALL_FACTOR", 300)
    path = tmp_path / "slow.pdf"
    path.write_bytes(tiny_pdf(b" " * 70_000_000, compress=True))
    expect_error(path, ParseLimits(timeout_s=1.0), "longer than 1 s", "timeout")


def test_memory_cap(tmp_path: Path) -> None:
    # Inflating a 74 MB stream cannot fit in a 100 MB address space on top of the interpreter.
    path = tmp_path / "hungry.pdf"
    path.write_bytes(tiny_pdf(b" " * 74_000_000, compress=True))
    expect_error(path, ParseLimits(memory_mb=100, timeout_s=60), "memory limit")


def test_decompression_bomb_hits_pypdf_limits(tmp_path: Path) -> None:
    path = tmp_path / "bomb.pdf"
    path.write_bytes(tiny_pdf(b" " * 200_000_000, compress=True))  # about 200 KB on disk
    expect_error(path, ParseLimits(), "safety limits")


def test_parse_many_isolates_a_bad_file(tmp_path: Path) -> None:
    bad = tmp_path / "broken.pdf"
    bad.write_bytes(random.Random(1).randbytes(5_000))
    results = list(parse_many([NOAA, bad, VORON], ParseLimits(), workers=2))
    assert sorted(path.name for path, _ in results) == sorted([NOAA.name, bad.name, VORON.name])
    by_name = {path.name: outcome for path, outcome in results}
    assert isinstance(by_name[bad.name], IngestError) and "not a PDF" in str(by_name[bad.name])
    assert isinstance(by_name[NOAA.name], ParsedManual) and by_name[NOAA.name].page_count == 21
    assert isinstance(by_name[VORON.name], ParsedManual) and by_name[VORON.name].page_count == 18


# --- discovery ------------------------------------------------------------------------------------

def test_find_pdfs(tmp_path: Path) -> None:
    (tmp_path / "docs" / "sub").mkdir(parents=True)
    a = tmp_path / "docs" / "a.pdf"
    b = tmp_path / "docs" / "sub" / "B.PDF"
    for path in (a, b):
        path.write_bytes(b"%PDF-1.4")
    (tmp_path / "docs" / "notes.txt").write_text("not a manual")
    odd = tmp_path / "manual.bin"
    odd.write_bytes(b"x")
    missing = tmp_path / "missing"
    found, problems = find_pdfs([tmp_path / "docs", str(a), odd, missing])
    assert found == sorted([a, b, odd])
    assert [path for path, _ in problems] == [missing]
    assert "no such file" in problems[0][1]


def test_a_date_set_large_on_the_title_page_is_not_the_title() -> None:
    """Title pages often set the release date as large as the name; a date names no manual."""
    from ingest.titles import page_title

    page1 = "Acme XR-200 Pump User Manual\nOctober 31, 2025\nContents\n1 Overview 3"
    assert page_title("October 31, 2025", page1, "xr200") == "Acme XR-200 Pump User Manual"
    assert page_title("Rev. 3 - 2024-03-01", "Rev. 3 - 2024-03-01\nAcme Valve V9", "v9") == "Acme Valve V9"
    # a printed name equal to the file's own name confirms it; "Contents" names nothing
    assert page_title("", "Acme Valve V9 User Manual\nContents", "acme_valve_v9_user_manual") == \
        "Acme Valve V9 User Manual"
    assert page_title("", "Contents\nAcme Valve V9", "x") == "Acme Valve V9"


@pytest.mark.parametrize("meta", ["产品介绍", "用户手册", "使用说明书", "Bedienungsanleitung", "Benutzerhandbuch",
                                  "Administrator"])
def test_a_chinese_or_german_document_kind_or_an_account_name_gives_way_to_the_cover(tmp_path: Path,
                                                                                      meta: str) -> None:
    """Issue 47: DSView's /Title '产品介绍' ('product introduction') and a Jieli FAQ's 'Administrator' (the
    account that saved it) named every chunk of their manuals."""
    parsed = parse_pdf(_titled_pdf(tmp_path / "p.pdf", meta, "Acme XR-200 Dosing Pump"), ParseLimits())
    assert parsed.title == "Acme XR-200 Dosing Pump"
    assert is_generic_title(meta) or not meaningful_title(meta)
    for named in ("蜂鸟 E203 快速上手说明", "AD16N 硬件设计指南", "ZOE Display Benutzerhandbuch"):
        assert not is_generic_title(named), named


def test_a_numbered_section_or_a_sentence_on_page_one_is_no_title() -> None:
    page1 = ("一、Answer\n1、开发板板子供电方式\n1）、可以通过 USB 口、TYPE-C 口、VBAT 口供电。供电范围 3.3~5.5V。\n"
             "常供电给开发板运行。")
    assert choose_title(None, "一、 Answer", page1, "jieli_ac632n_devboard_faq") == "jieli ac632n devboard faq"
    assert choose_title(None, "", "第一章 概述\n本手册介绍开发板。", "board_guide") == "board guide"


def test_a_letter_grid_set_large_on_the_cover_is_no_title(tmp_path: Path) -> None:
    """eval/de-dev3's wordclock Anleitung sets the clock's letter grid largest on its cover: its title was
    'M E S P I W O R D F B A C L O C K D A N ... Anleitung', cited on every card and in /v1's sources. Single
    letters set apart by spaces are no words to cite a manual by; the cover's next title-like line names it."""
    grid = [b"M E S P I W O R D F", b"B A C L O C K D A N", b"E A N A L L E E F T", b"M A N U A L N J L K"]
    big = b" ".join(b"(" + row + b") '" for row in [*grid, b"Anleitung"])
    cover = (b"BT /F1 28 Tf 72 720 Td 34 TL " + big + b" ET\n"
             b"BT /F1 14 Tf 72 500 Td (Multilayout Wordclock WK-12) Tj ET\n"
             b"BT /F1 10 Tf 72 460 Td (Build the clock, flash its firmware and set up its web interface.) Tj ET")
    path = tmp_path / "wordclock.pdf"
    path.write_bytes(tiny_pdf(cover))
    assert parse_pdf(path, ParseLimits()).title == "Multilayout Wordclock WK-12"
    from ingest.titles import page_title

    # a title of words with a single letter or two in it is still a title
    assert page_title("Model X 3 A Pump", "Model X 3 A Pump\nContents", "x") == "Model X 3 A Pump"
