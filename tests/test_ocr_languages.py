"""OCR in the manual's language (issue 47, ingest.ocr_languages = "auto", the default), with the real programs
on a real Chinese manual: the screenshot pages of JieLi's USB upgrade tool notes (eval/zh-dev2, Apache-2.0)
were read with Tesseract's English data only, as noise ("Eig Th AN AR Ae APRS"), so no Chinese question
found them. Now the text layer's language picks Tesseract's data (plus English); a manual with no text
layer is probed; data that is not installed is named with its package, and the manual is read again by
the next ingest once it is installed. Chinese words come back unspaced, as they are written.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ingest.models import ChunkParams, OcrPage, ParseLimits
from ingest.ocr import parse_tsv
from ingest.ocr_languages import choose, text_languages

pytestmark = pytest.mark.timeout(600)

JIELI = Path(__file__).resolve().parent.parent / "eval" / "zh-dev2" / "manuals" / "jieli_usb_updater_tool_v4.pdf"
# Words only page 3's screenshots hold (its text layer is the running header and two lines)
ON_SCREENSHOT = ("检测更新", "最新版本")


def tessdata() -> Path:
    out = subprocess.run(["tesseract", "--list-langs"], capture_output=True, text=True, check=True).stdout
    return Path(out.splitlines()[0].split('"')[1])


if not shutil.which("tesseract") or not {"eng", "chi_sim"} <= set(
        subprocess.run(["tesseract", "--list-langs"], capture_output=True, text=True).stdout.split()):
    pytest.fail("these tests need Debian's tesseract-ocr with tesseract-ocr-chi-sim (make test installs it)",
                pytrace=False)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("ocr-languages")


@pytest.fixture(scope="module")
def two_pages(folder: Path) -> Path:
    """Pages 1 (Chinese text layer) and 3 (screenshots with two lines of text layer) of the JieLi notes."""
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter()
    reader = PdfReader(str(JIELI))
    for index in (0, 2):
        writer.add_page(reader.pages[index])
    path = folder / "jieli_upgrade_tool_two_pages.pdf"
    with path.open("wb") as fh:
        writer.write(fh)
    return path


def test_screenshots_of_a_chinese_manual_are_read_in_chinese(folder: Path, two_pages: Path, embedder: Any) -> None:
    from retrieval.search import search
    from retrieval.types import SearchParams
    from retrieval.versions import IndexStore

    store = IndexStore(folder / "data")
    report = store.ingest([two_pages], embedder, ChunkParams(), ParseLimits())
    assert report.version and not report.failed, report
    version = store.open()
    entry = version.manifest["manuals"][0]
    assert entry["ocr"]["pages"] == [2] and entry["ocr"]["languages"] == ["chi_sim", "eng"], entry["ocr"]
    assert "missing" not in entry["ocr"]
    text = version.chunks.page_text(entry["sha256"], 2)
    assert text and all(word in text for word in ON_SCREENSHOT), text[:400]
    assert "小窗口" in text  # one word per Chinese character from Tesseract, joined without spaces
    hits = search(store, embedder, "怎么检测更新？", SearchParams(k=3))
    assert hits[0].page == 2 and hits[0].source == "ocr", [(h.page, h.text[:30]) for h in hits]


def test_a_scan_without_text_layer_is_probed_for_its_language(folder: Path) -> None:
    from bench.scans import image_page, image_pdf, rasterise
    from ingest.sandbox import parse_pdf

    raster = rasterise(JIELI, 200, first=3, last=3)[0]
    scan = folder / "jieli_page3_scan.pdf"
    scan.write_bytes(image_pdf([image_page(raster, 200)], [(raster[0], raster[1])]))
    parsed = parse_pdf(scan, ParseLimits())
    assert parsed.ocr_engine["languages"] == ["chi_sim", "eng"] and sorted(parsed.ocr) == [1]
    assert any(word in parsed.pages[0].text for word in ON_SCREENSHOT), parsed.pages[0].text[:400]


def test_missing_language_data_is_named_then_read_once_installed(folder: Path, two_pages: Path, embedder: Any,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from retrieval.versions import IndexStore

    english_only = folder / "tessdata-eng"
    english_only.mkdir()
    for name in ("eng.traineddata", "osd.traineddata", "configs"):
        os.symlink(tessdata() / name, english_only / name)
    store = IndexStore(folder / "data-missing")
    with monkeypatch.context() as patch:
        patch.setenv("TESSDATA_PREFIX", str(english_only))
        first = store.ingest([two_pages], embedder, ChunkParams(), ParseLimits())
    assert first.version and first.added == [two_pages.name]
    notes = [note for _file, note in first.unread]
    assert notes == ["read 1 page by OCR without Chinese data (text in it is read as English, often noise): "
                     "install tesseract-ocr-chi-sim, then ingest again"], notes
    entry = store.open().manifest["manuals"][0]
    assert entry["ocr"]["languages"] == ["eng"] and entry["ocr"]["missing"] == ["chi_sim"]
    assert not any(word in store.open().chunks.page_text(entry["sha256"], 2) for word in ON_SCREENSHOT)

    # the data is there now (TESSDATA_PREFIX gone): the same file is parsed again, not kept
    second = store.ingest([two_pages], embedder, ChunkParams(), ParseLimits())
    assert second.version and second.changed == [two_pages.name] and not second.unchanged, second
    assert [note for _f, note in second.unread] == [
        "scanned pages read again: tesseract-ocr-chi-sim installed since"]
    entry = store.open().manifest["manuals"][0]
    assert entry["ocr"]["languages"] == ["chi_sim", "eng"] and "missing" not in entry["ocr"]
    assert all(word in store.open().chunks.page_text(entry["sha256"], 2) for word in ON_SCREENSHOT)
    # and only once
    third = store.ingest([two_pages], embedder, ChunkParams(), ParseLimits())
    assert third.version is None and third.unchanged == [two_pages.name]


def _tsv(words: list[tuple[int, str]]) -> str:
    """Tesseract's TSV of a 1000 x 1000 page: (line number, word), each at 90 % confidence."""
    head = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext"
    rows = [head, "1\t1\t0\t0\t0\t0\t0\t0\t1000\t1000\t-1\t"]
    rows += [f"5\t1\t1\t1\t{line}\t{i}\t{10 * i}\t{40 * line}\t9\t20\t90\t{word}" for i, (line, word) in
             enumerate(words, 1)]
    return "\n".join(rows) + "\n"


def test_ocr_words_are_spaced_as_their_script_writes_them() -> None:
    text, page = parse_tsv(_tsv([(1, "点击"), (1, "“检测"), (1, "更新”，"), (1, "USB"), (1, "升级"), (2, "Tighten"),
                                 (2, "the"), (2, "bolts"), (3, "전원을"), (3, "켜십시오")]))
    assert text == '点击"检测更新"，USB升级\nTighten the bolts\n전원을 켜십시오'
    words = [text[int(w[5]):int(w[6])] for w in page.words]
    assert words == ["点击", '"检测', '更新"，', "USB", "升级", "Tighten", "the", "bolts", "전원을", "켜십시오"]
    assert isinstance(page, OcrPage)


def test_languages_come_from_the_text_layer_and_english_is_always_read() -> None:
    german = "Der Drucker wird mit dem Netzteil verbunden und die Taste wird gedrückt, bis die LED leuchtet."
    chinese = "将强制升级工具插入电脑的USB接口，此时电脑会弹出一个新的盘符。"
    english = "Connect the programmer to the board and press the button until the LED is on."
    assert text_languages({1: german, 2: german, 3: "", 4: chinese}, skip={3}) == ["de", "zh"]
    assert text_languages({1: chinese, 2: chinese, 3: chinese, 4: chinese, 5: chinese, 6: english}, skip=set()) == [
        "zh"]  # one page in five or fewer is a quotation
    assert text_languages({1: "  ", 2: "A4 210x297"}, skip={1}) == []
    assert choose(["zh"], {"eng", "chi_sim", "osd"}) == (["chi_sim", "eng"], [])
    assert choose(["de", "zh"], {"eng", "deu"}) == (["deu", "eng"], ["chi_sim"])
    assert choose([], {"eng"}) == (["eng"], [])
    with pytest.raises(ValueError, match="stands alone"):
        ParseLimits(ocr_languages=("auto", "deu"))
