"""ingest.drawings: the drawing is cut out of content streams, never the text, and the text extracted
from real manuals is the same with and without that step."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ingest.drawings import drop_drawing, strip_drawings
from ingest.pdf import extract

EVAL = Path(__file__).resolve().parent.parent / "eval"

PAGE = b"""q
0.5 0 0 0.5 0 0 cm
1 0 0 RG 2 w
10 10 m 200 10 l 200 200 l h S
0 0 1 rg 50 50 100 100 re f
q 1 0 0 1 30 40 cm
Q
BT /F1 12 Tf 72 700 Td (Draw 1 2 m then 3 4 l S to the end) Tj ET
BT /F1 10 Tf 72 680 Td [(Torque) -250 (5 Nm)] TJ ET
/Artifact << /Alt (q 1 0 0 1 0 0 cm Q) >> BDC 5 5 m 6 6 l S EMC
% a comment with 1 2 m in it
Q
"""


def test_the_drawing_goes_and_every_text_operator_stays() -> None:
    out = drop_drawing(PAGE)
    assert out is not None
    for kept in (b"(Draw 1 2 m then 3 4 l S to the end) Tj", b"[(Torque) -250 (5 Nm)] TJ",
                 b"BT /F1 12 Tf 72 700 Td", b"0.5 0 0 0.5 0 0 cm", b"<< /Alt (q 1 0 0 1 0 0 cm Q) >> BDC",
                 b"% a comment with 1 2 m in it", b"EMC"):
        assert kept in out
    for gone in (b"10 10 m", b"200 10 l", b"50 50 100 100 re", b"1 0 0 RG", b"2 w", b"0 0 1 rg",
                 b"5 5 m", b"1 0 0 1 30 40 cm"):
        assert gone not in out
    assert out.split().count(b"q") == 1  # the outer group holds text; the empty one is gone


@pytest.mark.parametrize("stream", [
    b"q 1 0 0 1 0 0 cm BI /W 2 /H 2 /BPC 8 /CS /G ID \x00\x10 1 2 m EI Q 3 4 m 5 6 l S",  # inline image
    b"BT (unbalanced \\) (1 2 m 3 4 l S) Tj ET 1 2 m",  # a string too deeply nested to delimit
    b"BT ((((deep)))) Tj ET 1 2 m 3 4 l S",
])
def test_streams_it_cannot_read_safely_are_left_whole(stream: bytes) -> None:
    assert drop_drawing(stream) is None


def test_a_stream_without_drawing_is_unchanged() -> None:
    text = b"BT /F1 12 Tf 72 700 Td (Hello) Tj ET\n"
    assert drop_drawing(text) == text


def test_pages_get_lighter_streams_and_the_file_is_not_written(tmp_path: Path) -> None:
    from pypdf import PdfReader

    pdf = EVAL / "dev" / "manuals" / "olimex_agonlight2_user_manual.pdf"
    before = pdf.read_bytes()
    reader = PdfReader(str(pdf))
    sizes = [len(p.get_contents().get_data()) for p in reader.pages]
    assert strip_drawings(reader) > 0
    after = [len(p.get_contents().get_data()) for p in reader.pages]
    assert all(a <= b for a, b in zip(after, sizes, strict=True)) and sum(after) < sum(sizes) / 2
    assert pdf.read_bytes() == before


@pytest.mark.parametrize("pdf", [
    *sorted((Path(__file__).resolve().parent.parent / "sample_manuals").glob("*.pdf")),
    EVAL / "dev" / "manuals" / "olimex_agonlight2_user_manual.pdf",  # its pages are mostly drawing
    EVAL / "dev" / "manuals" / "ender3_quick_start_guide.pdf",
], ids=lambda p: p.name)
def test_real_manuals_give_the_same_text_with_the_drawing_dropped(pdf: Path) -> None:
    assert extract(pdf, 2000) == extract(pdf, 2000, drop_drawings=False)


def test_the_setting_reaches_the_parse_worker(monkeypatch: pytest.MonkeyPatch, sample_pdfs: list[Path]) -> None:
    """`drop_drawings = false` (an escape hatch) makes the sandboxed worker parse whole streams."""
    from gateway.config import load_settings
    from ingest import sandbox

    commands: list[list[str]] = []
    real_run = sandbox.run_child  # how the sandbox starts its worker (ingest.child_wait)

    def recording_run(command: list[str], *args: Any, **kwargs: Any) -> Any:
        commands.append(list(command))
        return real_run(command, *args, **kwargs)

    monkeypatch.setattr(sandbox, "run_child", recording_run)
    off = load_settings(env={"MANUALQA_INGEST__DROP_DRAWINGS": "false"}).ingest
    on = load_settings(env={}).ingest
    assert off.drop_drawings is False and on.drop_drawings is True
    whole, dropped = sandbox.parse_pdf(sample_pdfs[0], off), sandbox.parse_pdf(sample_pdfs[0], on)
    assert "--keep-drawings" in commands[0] and "--keep-drawings" not in commands[1]
    assert whole.pages == dropped.pages and whole.title == dropped.title
