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
from ingest.ocr_languages import choose, text_languages
from ingest.ocr_tsv import parse_tsv

pytestmark = pytest.mark.timeout(600)

JIELI = Path(__file__).resolve().parent.parent / "eval" / "zh-dev2" / "manuals" / "jieli_usb_updater_tool_v4.pdf"
# Page 3: a line of its text layer, and words only its screenshots hold (a dialog's menu entry)
TEXT_LAYER = "先弹出一个小窗口，点击“检测更新”，确保是最新版本，如果不是最新版本，则按照更新"
ON_SCREENSHOT = ("打开其他工具",)


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
    # the text layer's own lines stay as typed (OCR reads them worse: straight quotes at best) and come first;
    # OCR adds the lines it alone read, one word per Chinese character from Tesseract joined without spaces
    assert TEXT_LAYER in text and text.index(TEXT_LAYER) < text.index(ON_SCREENSHOT[0]), text[:600]
    assert text.count("检测更新") == 1
    hits = search(store, embedder, "打开其他工具", SearchParams(k=3))
    assert any(h.page == 2 and h.source == "ocr" and "打开其他工具" in h.text for h in hits), [
        (h.page, h.source, h.text[:30]) for h in hits]
    # no passage mixes the two: the typed line is text (no OCR confidence, no doubt), the pictures' words OCR
    typed = [h for h in search(store, embedder, "检测更新 最新版本", SearchParams(k=5)) if TEXT_LAYER in h.text]
    assert typed and all(h.source == "text" and h.ocr_confidence is None and ON_SCREENSHOT[0] not in h.text
                         for h in typed), [(h.page, h.source, h.text[:40]) for h in typed]
    words = version.chunks.ocr_page(entry["sha256"], 2)
    assert words is not None and "打开" in [text[int(w[5]):int(w[6])] for w in words.words]


def test_a_scan_without_text_layer_is_probed_for_its_language(folder: Path) -> None:
    from bench.scans import image_page, image_pdf, rasterise
    from ingest.sandbox import parse_pdf

    raster = rasterise(JIELI, 200, first=3, last=3)[0]
    scan = folder / "jieli_page3_scan.pdf"
    scan.write_bytes(image_pdf([image_page(raster, 200)], [(raster[0], raster[1])]))
    parsed = parse_pdf(scan, ParseLimits())
    assert parsed.ocr_engine["languages"] == ["chi_sim", "eng"] and sorted(parsed.ocr) == [1]
    assert "检测更新" in parsed.pages[0].text and "打开其他工具" in parsed.pages[0].text, parsed.pages[0].text[:400]


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
    english_read = store.open().chunks.page_text(entry["sha256"], 2)
    assert TEXT_LAYER in english_read and not any(word in english_read for word in ON_SCREENSHOT)

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


def test_ocr_adds_to_a_text_layer_only_the_lines_it_lacks() -> None:
    """ingest.ocr_merge: OCR lines the text layer holds (read worse) are dropped, the others follow it with
    their words moved; a chunk of the text layer's own text is not OCR text (no confidence)."""
    from ingest.ocr_merge import merge
    from ingest.ocr_tsv import chunk_confidence

    layer = "1、工具一来上电，红灯和绿灯同时闪一下。\n2、当 JTAG连接失败时，红灯和绿灯都会闪烁。\n"
    ocr_text, page = parse_tsv(_tsv([(1, "2、当"), (1, "JTAG"), (1, "连接"), (1, "失败"), (1, "时，"), (1, "红灯"),
                                     (1, "和"), (1, "绿灯"), (1, "都会"), (1, "内烁。"), (2, "isd_download.exe"),
                                     (2, "141"), (2, "KB"), (3, "L")]))
    merged = merge(layer, ocr_text, page)
    assert merged is not None
    text, words = merged
    assert text == layer.rstrip() + "\n\nisd_download.exe 141 KB"  # "内烁" (misread) and the speck "L" dropped
    assert [text[int(w[5]):int(w[6])] for w in words.words] == ["isd_download.exe", "141", "KB"]
    assert words.confidence == 90.0
    assert chunk_confidence(words, 0, len(layer.rstrip()), 80.0) == (None, ())
    assert chunk_confidence(words, 0, len(text), 80.0) == (90.0, ())
    assert merge(layer, parse_tsv(_tsv([(1, "红灯"), (1, "和"), (1, "绿灯"), (1, "同时"), (1, "闪"), (1, "一下")]))[0],
                 OcrPage(0.0, [])) is None  # nothing new
