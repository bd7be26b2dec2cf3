"""A question that names a manual is searched among the manuals it names (retrieval.named): a Chinese
question about an English manual, on a gateway that also holds a Chinese one, no longer gets the
Chinese manual's passages first. Real PDFs (written here), a real index (FAISS, SQLite FTS5)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

from gateway.config import Settings
from gateway.services import Services
from retrieval.named import name_words, named_manuals
from tests.support.pdfs import multilingual_pdf

CATALOG = [("a" * 64, "Low Cost Profiler (LCP) User Manual Piston-board", "noaa_lcp_pistonboard_user_manual.pdf"),
           ("b" * 64, "Ender 3 Series 3D Printer Quick Start Guide", "ender3_quick_start_guide.pdf"),
           ("c" * 64, "Für die Multilayout-ESP-Wordclock", "esp_wordclock_anleitung.pdf"),
           ("d" * 64, "VORON", "voron_assembly_setup_guide_2016.pdf"),
           ("e" * 64, "Voron Design SKR Mini E3 Setup Guide V0.0", "voron0_setup_guide.pdf"),
           ("f" * 64, "蜂鸟 E203 快速上手说明", "hbird_e203_quick_start.pdf")]
# which manuals' passages hold a word: "printer" and "board" are in several, the names in their own
HOLDERS = {"piston": {"a" * 64}, "pistonboard": {"a" * 64}, "ender": {"b" * 64}, "printer": {"b" * 64, "d" * 64},
           "board": {"a" * 64, "e" * 64, "f" * 64}, "voron": {"d" * 64, "e" * 64}, "wordclock": {"c" * 64},
           "蜂鸟": {"f" * 64}}


def named(question: str) -> set[str]:
    return {sha[0] for sha in named_manuals(question, CATALOG, lambda w: HOLDERS.get(w.lower(), set()))}


def test_a_product_word_names_its_manual_in_any_language_of_the_question() -> None:
    assert named("piston board 的调试串口波特率是多少？") == {"a"}
    assert named("Welche Baudrate hat die Debug-Konsole des Pistonboards?") == {"a"}  # read as its stem
    assert named("Is the pistonboardmount included?") == set()  # a name inside a longer word names nothing
    assert named("What baud rate does the pistonboard console use?") == {"a"}
    assert named("新买的 Ender 3 开箱后，插电前电源上要设置什么吗？") == {"b"}
    assert named("蜂鸟开发板怎么烧写？") == {"f"}


def test_a_word_other_manuals_hold_names_none_however_many_names_hold_it() -> None:
    assert named("which printer bed size?") == set()  # "printer" is in the Voron manual's passages too
    assert named("board runs off 5v, can I plug usb-c in?") == set()


def test_function_words_of_any_language_and_document_words_name_nothing() -> None:
    assert "anleitung" not in name_words(*CATALOG[2][1:])
    assert named("Was passiert, wenn die Uhr kein WLAN findet?") == set()  # "die" is in the title
    assert named("Wie stelle ich bei der Wordclock die Helligkeit ein?") == {"c"}


def test_a_name_two_manuals_share_names_both() -> None:
    assert named("VORON 热床中心坐标是多少？") == {"d", "e"}


ZH_PAGES = [["BLDC-300 无刷电机驱动器", "使用说明书"],
            ["第二章 技术参数", "本驱动器的输入电压范围为12V至24V。", "最大持续电流为5A，峰值电流为10A。"],
            ["第三章 接线说明", "将电机的三根相线分别接到U、V、W端子。"]]
EN_PAGES = [["AquaFlow P-40 Pump", "Service Manual"],
            ["1 Specifications", "The pump delivers 40 litres per minute at a head of 12 metres.",
             "Supply voltage is 230 V AC, 50 Hz; rated power is 750 W."],
            ["2 Maintenance", "Replace the shaft seal every 2000 operating hours."]]
QUESTION = "AquaFlow 水泵的最大持续电流是多少？"  # the Chinese manual states a maximum continuous current


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Iterator[Services]:
    work = tmp_path_factory.mktemp("named")
    paths = []
    for name, pages in (("bldc300_zh.pdf", ZH_PAGES), ("aquaflow_p40_service_manual.pdf", EN_PAGES)):
        path = work / name
        path.write_bytes(multilingual_pdf(pages))
        paths.append(path)
    g = Services(Settings(data_dir=work / "data"), embedder=embedder)
    g.ingest(paths)
    g.settings.answer.mode = "extractive"
    yield g
    g.log.close()


def test_a_chinese_question_naming_an_english_manual_is_searched_in_it(gw: Services) -> None:
    manuals = [h.manual for h in gw.search(QUESTION)]  # the pump's three passages, then the others' best
    assert manuals[:3] == ["aquaflow_p40_service_manual.pdf"] * 3 and "aquaflow" not in "".join(manuals[3:]), manuals
    res = gw.answer(QUESTION)
    assert res.passages[0]["manual"] == "aquaflow_p40_service_manual.pdf"
    assert any(f.startswith("searched_named_manuals: AquaFlow") for f in res.flags), res.flags
    assert res.outcome == "not_found", res.answer  # the pump's manual states no current: not the driver's 5 A


def test_without_the_setting_or_with_a_scope_the_language_leads_as_before(gw: Services) -> None:
    before = gw.settings.search
    try:
        gw.settings.search = dataclasses.replace(before, named_manuals=False)
        assert gw.search(QUESTION)[0].manual == "bldc300_zh.pdf"  # what a technician got before
    finally:
        gw.settings.search = before
    hits = gw.search(QUESTION, manuals=["bldc300_zh.pdf"])  # a scope the caller gave wins
    assert hits and {h.manual for h in hits} == {"bldc300_zh.pdf"}

