"""Questions the manuals do not answer end `not_found`, saying what was searched and what is missing
(issue 48, item 7), on the real sample manuals, in the pipeline and over `/v1`.

The closest passages of an on-topic question that the manuals do not answer used to be quoted as
`evidence_only` ("What baud rate does the Voron serial console use?" got the piston board's 115200):
gateway.answer.coverage reads what the question names (a manual, a value of a kind) against them.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from gateway.answer.evidence_strength import NO_PASSAGE_TEXT, _weakness
from gateway.config import AnswerSettings, Settings
from gateway.services import Services
from gateway.web.openai_replies import answer_reply
from tests.support.server import GatewayServer

PISTON = "Low Cost Profiler (LCP) User Manual Piston-board"
VORON = "Voron Design SKR Mini E3 Setup Guide V0.0"
OTHER_MANUAL = "What baud rate does the Voron serial console use?"


@pytest.fixture(scope="module")
def gw(sample_data_dir: Path, tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Iterator[Services]:
    data = tmp_path_factory.mktemp("coverage") / "data"
    shutil.copytree(sample_data_dir, data)
    g = Services(Settings(data_dir=data), embedder=embedder)
    g.settings.answer.mode = "extractive"
    yield g
    g.log.close()


def test_a_value_no_passage_states_is_not_found_naming_the_manual_searched(gw: Services) -> None:
    res = gw.answer("What IP rating does the piston board enclosure have?")
    assert res.outcome == "not_found" and "quantity_not_in_evidence: IP rating" in res.flags, res.answer
    assert res.answer.startswith(f"The closest passages in {PISTON} do not state an IP rating"), res.answer
    assert res.passages and res.passages[0]["manual"] == "noaa_lcp_pistonboard_user_manual.pdf"
    res = gw.answer("How many ppm is the piston board crystal?")
    assert res.outcome == "not_found" and "quantity_not_in_evidence: tolerance in ppm" in res.flags


def test_a_speed_asked_in_a_unit_no_passage_states_is_not_found(gw: Services) -> None:
    """A question that names the unit of the speed it wants ("in mm/min", "rpm") asks for a value no passage of
    the sample manuals states in any speed unit (eval/de-dev2: a router's maximum feed rate in mm/min, answered
    with its frame's dimensions); "how fast" alone asks nothing of the kind (a baud rate, a motion setting)."""
    from gateway.answer.coverage import unstated_values

    res = gw.answer("What is the maximum travel speed of the Voron printer in mm/s?")
    assert res.outcome == "not_found" and "quantity_not_in_evidence: speed" in res.flags, (res.answer, res.flags)
    assert res.answer.startswith(f"The closest passages in {VORON} do not state a speed"), res.answer
    assert unstated_values("Vorschub maximal in mm/min?", ["Vorschub bis 2000 mm/min, Eilgang 80 mm/s."]) == []
    assert unstated_values("Max feed 50 mm/s?", ["feed rates up to 3000 mm/min"]) == []  # any unit of the family
    assert unstated_values("Spindle speed in rpm?", ["Spindle motor: 500 W"]) == ["speed"]
    assert unstated_values("how fast can it go?", ["Spindle motor: 500 W"]) == []


def test_a_question_naming_the_other_manual_is_read_against_that_manual(gw: Services) -> None:
    res = gw.answer(OTHER_MANUAL)  # the piston board's 115200 baud is the closest passage
    assert res.outcome == "not_found", res.answer
    assert f"searched_named_manuals: {VORON}" in res.flags and "quantity_not_in_evidence: baud rate" in res.flags
    assert res.passages[0]["manual"] == "voron0_setup_guide.pdf"
    assert res.answer.startswith(f"The closest passages in {VORON} do not state a baud rate")


def test_a_value_stated_only_for_other_things_is_not_found(gw: Services) -> None:
    res = gw.answer("How many hours does the LCP run on one battery pack?")
    assert res.outcome == "not_found" and "value_not_for_question: duration" in res.flags, res.answer
    assert "state a duration only for other things than this question names" in res.answer


def test_answerable_questions_are_still_answered(gw: Services) -> None:
    res = gw.answer("What baud rate does the piston board debug console use?")
    assert res.outcome == "evidence_only" and "115200" in res.answer, res.answer
    res = gw.answer("What input voltage range does the piston board accept?")
    assert res.outcome == "evidence_only" and "36V" in res.answer, res.answer


def test_the_operator_can_switch_it_off(gw: Services) -> None:
    gw.settings.answer.coverage_check = False
    try:
        res = gw.answer("What IP rating does the piston board enclosure have?")
        assert res.outcome == "evidence_only" and not any(f.startswith("quantity_not") for f in res.flags)
    finally:
        gw.settings.answer.coverage_check = True


def test_not_found_without_passages_lists_none() -> None:
    weak = _weakness("anything", [], False, {"best_similarity": None}, AnswerSettings())
    assert weak is not None and weak.notice == NO_PASSAGE_TEXT and "listed below" not in weak.notice
    reply = answer_reply({"id": "x", "outcome": "not_found", "answer": weak.notice, "passages": []}, "http://h")
    assert "listed" not in reply.text and "Closest passages" not in reply.text


@pytest.mark.slow
def test_v1_not_found_lists_the_passages_of_the_manual_it_names(sample_data_dir: Path,
                                                                 tmp_path_factory: pytest.TempPathFactory) -> None:
    srv = GatewayServer(sample_data_dir, tmp_path_factory.mktemp("coverage-v1"),
                        config='[answer]\nmode = "extractive"\n')
    srv.start()
    try:
        key = srv.cli("keys", "create", "reader1", "--role", "reader").stdout.strip()
        r = httpx.post(srv.url + "/v1/chat/completions", headers={"Authorization": f"Bearer {key}"}, timeout=120,
                       json={"model": "manualqa", "messages": [{"role": "user", "content": OTHER_MANUAL}]})
        assert r.status_code == 200, r.text
        body = r.json()
        text = body["choices"][0]["message"]["content"]
        assert body["manualqa"]["outcome"] == "not_found", text
        notice, _, listed = text.partition("\n\nClosest passages (they may not answer it):\n")
        assert notice.startswith(f"The closest passages in {VORON} do not state a baud rate"), text
        assert "listed below" in notice
        assert listed.startswith(f"[1] {VORON} p."), text  # listed, and from the manual the notice names
    finally:
        srv.stop()


@pytest.mark.parametrize(("question", "kind", "stated", "unstated"), [
    # eval/de-dev3: the wordclock states no IP code; German asks for it as "Schutzart", Chinese as 防护等级
    ("Darf ich die Wortuhr im Badezimmer aufhängen, welche Schutzart hat sie?", "IP rating",
     "Das Gehäuse erreicht Schutzart IP54.", "Die Uhr wird mit 5 V betrieben."),
    ("这个控制器的防护等级是多少？", "IP rating", "外壳防护等级 IP65。", "输入电压 24V。"),
    # eval/fr-dev: French asks for it as "indice de protection"
    ("Les prises, elles ont quel indice de protection IP ?", "IP rating", "Boîtier étanche IP44.",
     "Chaque prise supporte 3500 W."),
    ("Welche Baudrate nutzt die serielle Konsole?", "baud rate", "Die Konsole läuft mit 115200 Baud.",
     "Die Konsole wird über USB angeschlossen."),
    # eval/zh-dev3: the rate named, then its value in the flasher's own shorthand ("2M")
    ("FlashCube 走串口烧录，波特率一般设多少比较合适？", "baud rate",
     "Uart Rate：当选择 UART 进行下载的时候，烧录使用的波特率，推荐下载频率 2M", "串口烧录需要先按下 BOOT 键。"),
    ("Welche I2C-Adresse hat der Sensor?", "bus address", "Die I2C-Adresse ist 0x76.", "Der Sensor sitzt am I2C-Bus."),
])
def test_value_kinds_asked_in_german_and_chinese(question: str, kind: str, stated: str, unstated: str) -> None:
    from gateway.answer.coverage import unstated_values

    assert unstated_values(question, [unstated]) == [kind]
    assert unstated_values(question, [stated]) == []


def test_german_and_chinese_durations_and_a_voltage_asked_with_its_adjective() -> None:
    """eval/de-dev3: "welche maximale Spannung" asks for volts as "welche Spannung" does; a stay "1 bis 256
    Sekunden" and "3 秒" state durations (the check knew only English units); a year's date does not."""
    from gateway.answer.quantities import asked_quantities, states, unstated_quantities

    assert asked_quantities("Welche maximale Spannung darf das DCC-Signal am Bremsmodul haben?") == ["voltage"]
    assert asked_quantities("Steht der Riemen unter Spannung?") == []
    question = "Wie lange hält der Zug im Pendelbetrieb?"
    assert unstated_quantities(question, ["Aufenthaltsdauer bei Pendelbetrieb, 1 bis 256 Sekunden"]) == []
    assert unstated_quantities(question, ["Pendelbetrieb mit Zwischenhalt aktivieren"]) == ["duration"]
    assert states("长按 3 秒进入配对模式", "duration") and states("Nach 10 Minuten schaltet sie ab", "duration")
    assert not states("2024年发布的版本", "duration")


def test_a_fuse_to_fit_asks_for_its_rating_in_amperes() -> None:
    """A technician asking which fuse to fit wants its rating (eval/de-dev, de-dev4: the ZOE display's and the
    LED distribution board's manuals name no fuse value; they were answered with unrelated passages). A thermal
    fuse's cut-off temperature or an eFuse's bits ask for no rating."""
    from gateway.answer.coverage import unstated_values

    no_rating = ["Das Display wird an 12 V angeschlossen.", "Connect the supply to J1."]
    assert unstated_values("Welche Sicherung muss vor das Display?", no_rating) == ["fuse rating"]
    assert unstated_values("What fuse should I put in the supply line?", no_rating) == ["fuse rating"]
    assert unstated_values("Quel calibre de fusible en amont ?", no_rating) == ["fuse rating"]
    assert unstated_values("Welche Sicherung muss vor das Display?", ["Sicherung: T1A träge"]) == []
    assert unstated_values("What fuse should I put in the supply line?", ["Use a 2 A slow-blow fuse."]) == []
    assert unstated_values("Cutoff temperature of the optional thermal fuse?", no_rating) == []
    assert unstated_values("勾了 eFuse 的 Enable，还缺什么文件？", no_rating) == []
