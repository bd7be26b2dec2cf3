"""Section headings (issue 10, "some headings are wrong"): a PDF's outline is its headings; without
one, table rows, restarted step numbers and wrapped titles no longer make wrong headings. On
made-up manuals, on a PDF written here with an outline, and on the real sample manual."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ingest import ChunkParams, PageText, ParsedManual, ParseLimits, chunk_manual, parse_pdf
from ingest.outline import key, matches, read_outline
from tests.support.pdfs import stream, write_pdf

SAMPLES = Path(__file__).resolve().parent.parent / "sample_manuals"
PARAMS = ChunkParams(max_chars=400, overlap_chars=50, min_chars=10)
BODY = "Check every item against this list before you start the assembly of the frame."


def manual(*pages: str, outline: list[tuple[int, str]] | None = None) -> ParsedManual:
    return ParsedManual(sha256="cd" * 32, file_name="x.pdf", title="X", page_count=len(pages), size_bytes=1,
                        pages=[PageText(n, t) for n, t in enumerate(pages, 1)], outline=outline or [])


def heading_of(chunks: list[Any], phrase: str) -> str:
    found = [c for c in chunks if phrase in c.text]
    assert found, f"no chunk holds {phrase!r}"
    return found[0].heading


BOM = ("Bill of Materials\n" + BODY + "\n"
       "DRV8825 Drivers (set of 5) VB-EL-01-DRV Amazon Link 1\n"
       "Cube Corner Bracket VB-FR-01-CB1 OpenBuilds Link 8\n"
       "The brackets hold the frame square; tighten them only after the frame is assembled.\n"
       "ESP32-POE-EA ESP32-WROOM-32UE Y Y - N\n"
       "These variants differ only in the antenna and the temperature range they are rated for.\n"
       "2020 Extrusion – Black –\n"
       "Cut lengths are listed in the extrusion table at the end of this chapter of the guide.")


def test_table_rows_are_not_headings() -> None:
    chunks = chunk_manual(manual(BOM), PARAMS)
    assert {c.heading for c in chunks} == {"Bill of Materials"}


def test_a_restarted_step_number_is_not_a_chapter() -> None:
    text = ("6. ALIGNING THE BED\n" + BODY + "\n"
            "7. IMPORT SETTINGS IN VISICUT\n" + BODY + "\n"
            "2. Download the Fabulaser Settings\n"
            "The project page holds the file; keep it on the computer that drives the laser.\n"
            "8. PREPARING FILE FOR LASER CUTTING\n" + BODY)
    chunks = chunk_manual(manual(text), PARAMS)
    assert heading_of(chunks, "The project page holds") == "7. IMPORT SETTINGS IN VISICUT"
    assert chunks[-1].heading == "8. PREPARING FILE FOR LASER CUTTING"


def test_a_title_wrapped_onto_two_lines_is_one_heading() -> None:
    text = ("1.5. The differences between the variants of the board and\n"
            "Its Isolated Version\n" + BODY)
    chunks = chunk_manual(manual(text), PARAMS)
    assert {c.heading for c in chunks} == {
        "1.5. The differences between the variants of the board and Its Isolated Version"}


def test_a_quoted_ui_label_does_not_make_a_sentence_a_title() -> None:
    # issue 27, item 4: the sample's p.6 card was headed by this instruction, a line of page 5
    text = ("Flashing the Board\n" + BODY + "\nsudo raspi-config\n"
            "Change the password via \u201cChange User Password\u201d\n"
            "\u2022Once you are at the command line of the Raspberry Pi, run the following commands:\n"
            "Don't Touch the Printer's Bed\n" + BODY)
    chunks = chunk_manual(manual(text), PARAMS)
    assert heading_of(chunks, "Once you are at the command line") == "Flashing the Board"
    assert chunks[-1].heading == "Don't Touch the Printer's Bed"  # apostrophes are not quotes


def test_a_heading_glued_to_a_label_beside_it_is_split_off() -> None:
    # issue 27, item 4: page 5's title fused with a "References:" box in the text layer, so page 4's
    # heading ran on; only a known label splits ("Configuring OctoPrint: ..." stays one line)
    text = ("MCU Wiring (X, Y, E, Hot End)\n" + BODY + "\f"
            "Klipper InstallationReferences: Klipper Installation Instructions SKR Installation Instructions\n"
            "Installing Klipper Firmware on your SKR Mini E3 Board\n" + BODY)
    pages = text.split("\f")
    chunks = chunk_manual(manual(*pages), PARAMS)
    assert heading_of(chunks, "Installing Klipper Firmware") == "Klipper Installation"
    assert heading_of(chunks, "Check every item") == "MCU Wiring (X, Y, E, Hot End)"
    other = chunk_manual(manual("Configuring OctoPrint: set the serial port to /tmp/printer and connect.\n" + BODY),
                         PARAMS)
    assert all(c.heading != "Configuring Octo" for c in other)


def test_the_sample_manual_cards_name_their_own_sections(sample_data_dir: Path) -> None:
    chunks = chunk_manual(parse_pdf(SAMPLES / "voron0_setup_guide.pdf", ParseLimits()), ChunkParams())
    assert heading_of(chunks, "Install OctoPi on your Raspberry Pi") == "Klipper Installation"
    assert all("Change the password" not in c.heading for c in chunks)


def test_an_outline_decides_the_headings() -> None:
    pages = ("Safety Notes\nNever open the housing while the unit is powered.\n" + BODY,
             "Wiring the Sensor to the\nController Board\n" + BODY + "\n"
             "Cube Corner Bracket Kit\n" + BODY + "\n"
             "CALIBRATION\nHold the sensor in still air for ten minutes before you start.")
    outline = [(1, "1. Safety Notes"), (2, "2. Wiring the Sensor to the Controller Board"), (2, "3. Calibration")]
    chunks = chunk_manual(manual(*pages, outline=outline), PARAMS)
    assert heading_of(chunks, "Never open the housing") == "1. Safety Notes"
    # the bookmark's own spelling, one title over two lines; a Title Case line it does not name is body
    assert heading_of(chunks, "Cube Corner Bracket Kit") == "2. Wiring the Sensor to the Controller Board"
    assert heading_of(chunks, "Hold the sensor in still air") == "3. Calibration"
    # without the outline the heuristics take the Title Case line: the outline is what changed it
    plain = chunk_manual(manual(*pages), PARAMS)
    assert heading_of(plain, "Cube Corner Bracket Kit") == "Cube Corner Bracket Kit"


def test_two_bookmarks_are_not_an_outline() -> None:
    pages = ("Safety Notes\nNever open the housing while the unit is powered.\n" + BODY,)
    chunks = chunk_manual(manual(*pages, outline=[(1, "Cover"), (1, "Back")]), PARAMS)
    assert chunks[0].heading == "Safety Notes"


def test_matching_ignores_numbering_case_and_punctuation() -> None:
    assert key("2.5.1. External power sense:") == key("External Power Sense") == "external power sense"
    assert matches("RVPC layout:", "", "RVPC layout") == 1
    assert matches("Wiring the Sensor to the", "Controller Board", "Wiring the sensor to the controller board") == 2
    assert matches("Wiring", "the Sensor", "Wiring the sensor to the controller board") == 0  # too little
    assert matches("Power", "", "Power supply") == 0


def outline_pdf() -> bytes:
    """Two pages, an outline of three entries (one nested), the last pointing at no page."""
    page = (b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 5 0 R "
            b"/Resources << /Font << /F1 6 0 R >> >> >>")
    return write_pdf([
        b"<< /Type /Catalog /Pages 2 0 R /Outlines 7 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R 4 0 R] /Count 2 >>",
        page,
        page.replace(b"5 0 R", b"11 0 R"),
        stream(b"BT /F1 14 Tf 72 720 Td (Introduction) Tj 0 -20 Td (This pump moves clean water only.) Tj ET"),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Type /Outlines /First 8 0 R /Last 10 0 R /Count 3 >>",
        b"<< /Title (Introduction) /Parent 7 0 R /Next 10 0 R /First 9 0 R /Last 9 0 R /Count 1 "
        b"/Dest [3 0 R /XYZ 0 792 0] >>",
        b"<< /Title (Safety\\tfirst) /Parent 8 0 R /Dest [4 0 R /Fit] >>",
        b"<< /Title (Missing page) /Parent 7 0 R /Prev 8 0 R /Dest [99 0 R /Fit] >>",
        stream(b"BT /F1 14 Tf 72 720 Td (Safety first) Tj 0 -20 Td (Unplug the pump before service.) Tj ET"),
    ])


def test_the_outline_is_read_from_a_real_pdf(tmp_path: Path) -> None:
    path = tmp_path / "pump.pdf"
    path.write_bytes(outline_pdf())
    parsed = parse_pdf(path, ParseLimits())
    assert parsed.outline == [(1, "Introduction"), (2, "Safety first")]  # tidied; the dangling entry left out


def test_a_broken_outline_costs_the_outline_not_the_manual() -> None:
    class Reader:
        @property
        def outline(self) -> list[Any]:
            raise KeyError("/First")

    assert read_outline(Reader(), 3) == []


@pytest.fixture(scope="module")
def piston() -> ParsedManual:
    return parse_pdf(SAMPLES / "noaa_lcp_pistonboard_user_manual.pdf", ParseLimits())


def test_real_manual_headings_are_its_bookmarks(piston: ParsedManual) -> None:
    titles = {title for _page, title in piston.outline}
    assert len(titles) >= 20
    chunks = chunk_manual(piston, ChunkParams())
    body = [c for c in chunks if c.page >= piston.outline[0][0]]
    assert body and all(c.heading in titles for c in body)
    assert heading_of(chunks, "There are two LEDs") == "2.2. LEDs"


def test_an_index_version_keeps_the_outline_for_re_chunking(sample_data_dir: Path) -> None:
    """A re-chunk (new chunk settings, a changed embedder) works from stored page text, not the PDF:
    the manifest carries the outline so the re-chunked manual keeps its bookmarked headings."""
    from retrieval.builder import reuse_manual
    from retrieval.versions import IndexStore

    base = IndexStore(sample_data_dir).open()
    info = next(m for m in base.manifest["manuals"] if m["file_name"].startswith("noaa"))
    assert len(info["outline"]) >= 20
    kept = reuse_manual(base, info)
    assert kept.parsed.outline == [(page, title) for page, title in info["outline"]]
    titles = {title for _page, title in kept.parsed.outline}
    again = chunk_manual(kept.parsed, ChunkParams(max_chars=700, overlap_chars=80))
    assert heading_of(again, "There are two LEDs") == "2.2. LEDs"
    assert all(c.heading in titles for c in again if c.page >= kept.parsed.outline[0][0])


def test_step_and_parenthesised_section_numbers_are_headings() -> None:
    # outline-less manuals number their sections "Step 2: ...", "6) ...", "a) ..."
    text = ("Step 1: Frame triangles\n" + BODY + "\n"
            "Step2: Cross bars\n"
            "Slide the cross bars through the vertices and fit a nut and washer on each end of them.\n"
            "6) RASDRViewer and RASDR Software Basics\n"
            "a) Introduction\n" + BODY + "\n"
            "b) Installing RASDRviewer\n"
            "The viewer runs under Windows XP, 7 and 8 and is downloaded from the project's site.")
    chunks = chunk_manual(manual(text), PARAMS)
    assert heading_of(chunks, "Check every item") == "Step 1: Frame triangles"
    assert heading_of(chunks, "Slide the cross bars") == "Step2: Cross bars"
    assert heading_of(chunks, "The viewer runs") == "b) Installing RASDRviewer"
    assert any(c.heading == "a) Introduction" for c in chunks)


def test_lettered_steps_in_a_row_are_not_headings() -> None:
    text = ("Mounting the Board\n" + BODY + "\n"
            "a) Remove Four Screws\n"
            "b) Lift The Cover\n"
            "c) Unplug The Fan\n"
            "Keep the screws together; the cover goes back on with the same four of them.")
    chunks = chunk_manual(manual(text), PARAMS)
    assert {c.heading for c in chunks} == {"Mounting the Board"}


def test_a_specification_row_with_a_value_is_not_a_heading() -> None:
    text = ("a) Specifications\n"
            "Basic specifications of the receiver are presented in the table below this line.\n"
            "RF Bandwidth (BW) 300 MHz to 3800 MHz\n"
            "Sampling Rate 32 MHz I & Q (equivalent to 64MHz Nyquist), in sixteen discrete steps.\n"
            "Dimensions 70 mm x 70 mm\n"
            "The dimensions are for the bare boards; a case adds about a centimetre each way.")
    chunks = chunk_manual(manual(text), PARAMS)
    assert heading_of(chunks, "a case adds") == "a) Specifications"
    # a value that starts the title, or is glued to letters in a name, does not make it a table row
    titles = ("12V Supply\n" + BODY + "\nP1dB\nThe 1 dB compression point is measured at every frequency of the sweep.")
    assert [c.heading for c in chunk_manual(manual(titles), PARAMS)] == ["12V Supply", "P1dB"]


def test_outline_titles_match_text_spaced_beside_unspaced_scripts() -> None:
    """Issue 47: pypdf spaces the text layer where the bookmark has none ("2.3 FPGA 开发板的硬件指标" for
    "2.3 FPGA开发板的硬件指标"); in scripts without spaces between words that space is no word boundary."""
    assert key("2.3 FPGA开发板的硬件指标") == key("2.3 FPGA 开发板的 硬件 指标") == "fpga开发板的硬件指标"
    assert matches("5.1 HBird-E-SDK 简介", "", "5.1 HBird-E-SDK简介") == 1
    assert key("インストール 手順") == key("インストール手順")  # Japanese kana
    assert key("การติดตั้ง โปรแกรม") == key("การติดตั้งโปรแกรม")  # Thai
    assert key("설치 방법") != key("설치방법")  # Korean spaces its words: they stay
    assert key("Power supply") != key("Powersupply")


def test_a_chinese_outline_names_the_sections_of_a_real_pdf(tmp_path: Path) -> None:
    import io

    from pypdf import PdfWriter

    from tests.support.pdfs import multilingual_pdf

    body = "蜂鸟开发板是一款入门级开发板，用于学习处理器设计和嵌入式软件开发。"
    data = multilingual_pdf([["1 概述", body],
                             ["2.3 FPGA 开发板的硬件指标", "使用的型号为 Xilinx XC7A100T，板载双晶振设计。", body],
                             ["3 蜂鸟 JTAG 调试器", "调试器通过 USB 连接电脑，用于下载程序和在线调试。", body]])
    writer = PdfWriter(clone_from=io.BytesIO(data))
    writer.add_outline_item(title="1 概述", page_number=0)
    writer.add_outline_item(title="2.3 FPGA开发板的硬件指标", page_number=1)
    writer.add_outline_item(title="3 蜂鸟JTAG调试器", page_number=2)
    out = io.BytesIO()
    writer.write(out)
    path = tmp_path / "board.pdf"
    path.write_bytes(out.getvalue())
    parsed = parse_pdf(path, ParseLimits())
    assert parsed.outline[1] == (2, "2.3 FPGA开发板的硬件指标")
    assert "2.3 FPGA 开发板的硬件指标" in parsed.pages[1].text  # the text layer's spelling, spaced
    chunks = chunk_manual(parsed, PARAMS)
    assert heading_of(chunks, "XC7A100T") == "2.3 FPGA开发板的硬件指标"
    assert heading_of(chunks, "下载程序") == "3 蜂鸟JTAG调试器"
