"""The quantity check: a question asking for a kind of value that no given passage states is not found."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.answer.quantities import asked_quantities, states, unstated_quantities


@pytest.mark.parametrize(("question", "kinds"), [
    ("What is the operating humidity range?", ["humidity"]),
    ("How heavy is the unit - can one person lift it?", ["mass"]),
    ("Torque for the M5 frame screws?", ["torque"]),
    ("What input voltage range does the board accept?", ["voltage"]),
    ("how loud is it while printing, in dB?", ["loudness"]),
    ("What air pressure in bar should the compressor deliver?", ["pressure"]),
    # Words that look like quantities but are not asked as one: no check, answered as before.
    ("What SD card size do I need?", []),
    ("How do I flash the firmware?", []),
    ("customer wants vinyl signs cut, ok?", []),
    # A quantity word naming a mode or a part, and "how far" for turning a control, ask for no value.
    ("switching from position to torque mode, anything to do first?", []),
    ("Where is the temperature sensor connector?", []),
    ("how far do i crank the audio gain?", []),
    ("How far can the sensor be from the controller?", ["length"]),
    ("What torque for the frame bolts?", ["torque"]),
    # a speed in mm/s asks for no length (issue 48: "do not state a length" for a print speed)
    ("Max print speed in mm/s", []),
    ("Cable length in mm?", ["length"]),
    # an impedance is stated in ohms (eval/zh-dev4: a scope's input impedance the manual never gives)
    ("What is the input impedance of the scope?", ["impedance"]),
    ("Welche Eingangsimpedanz hat der Verstärker?", ["impedance"]),
    ("DSCope 示波器的输入阻抗是多少？", ["impedance"]),
    ("阻抗匹配电阻焊在哪里？", []),
    # an extension lead is no length, nor is "longer" (eval/dev asked in German)
    ("Darf ich den Ender an einer Verlängerung ohne Schutzleiter betreiben?", []),
    ("Hält der Akku länger, wenn ich das Display dimme?", []),
    ("Welche Kabellänge ist maximal erlaubt?", ["length"]),
    # French asks with its own words (eval/fr-dev); a belt's "tension" and a sensor's place ask for no value
    ("La box accepte quelle tension d'alim en entrée ?", ["voltage"]),
    ("Le module fonctionne dans quelle plage de température ?", ["temperature"]),
    ("Quel est le poids du robot ?", ["mass"]),
    ("Il faut régler la tension de la courroie comment ?", []),
    ("Où est le capteur de température ?", []),
])
def test_asked_quantities(question: str, kinds: list[str]) -> None:
    assert asked_quantities(question) == kinds


@pytest.mark.parametrize(("text", "kind", "expected"), [
    ("Input: 6.5 to 15 V DC", "voltage", True),
    ("Machine Width X (mm): 230", "length", True),
    ("Tighten to 85 N·m", "torque", True),
    ("Tighten to 85 Nm", "torque", True),
    ("Operating humidity 10 to 90 %", "humidity", True),
    ("Weight: 12.5 kg", "mass", True),
    ("The relative humidity must be low", "humidity", False),
    ("Use version 15 of the slicer", "voltage", False),
    ("A 12V PSU rated 16.7A", "current", True),
    ("Set the bed to 60C and the nozzle to 200 °C", "temperature", True),
    ("Turn the shaft 0.0 to 360.0 degrees", "temperature", False),
    ("Heat to 60 degrees C", "temperature", True),
    ("1 GS/s sampling with an 8-bit ADC", "resolution", True),
    ("Display resolution 800 x 480", "resolution", True),
    ("Temperature resolution: 0.1 °C", "resolution", True),
    ("A high-resolution display makes it readable", "resolution", False),
    ("Input impedance 1MΩ // 15 pF", "impedance", True),
    ("Eingang 10 kΩ, Ausgang 50 Ohm", "impedance", True),
    ("终端电阻 120Ω", "impedance", True),
    ("Impedance matched to the coax", "impedance", False),
    ("100M sample rate, 1M samples", "impedance", False),
])
def test_states(text: str, kind: str, expected: bool) -> None:
    assert states(text, kind) is expected


def test_unstated_quantities_needs_every_asked_kind_somewhere() -> None:
    passages = ["Heater: silicone, 110V", "Power supply 12 V 16.7 A"]
    assert unstated_quantities("heated bed voltage and wattage?", passages) == ["power"]
    assert unstated_quantities("heated bed voltage and wattage?", [*passages, "250W heater"]) == []
    assert unstated_quantities("How do I level the bed?", []) == []


def _hit(manual: str, text: str, dense: float) -> Any:
    from retrieval.types import Hit

    return Hit(chunk_id=f"{manual}-1", manual=f"{manual}.pdf", title=manual, manual_sha256=manual * 16, page=2,
               heading="Specifications", text=text, score=1.0, dense_rank=1, lexical_rank=1, dense_score=dense)


def test_a_value_stated_for_another_manual_does_not_answer_for_the_first() -> None:
    from gateway.answer.deps import AnswerDeps
    from gateway.answer.pipeline import answer
    from gateway.answer.request import AnswerRequest
    from gateway.config import AnswerSettings
    from tests.test_answer_core import Model, Shelf, Sink

    board = _hit("aaaa", "The board is 80 x 70 mm and has two relays and a LiPo charger.", 0.8)
    printer = _hit("bbbb", "The printer works at an operating temperature of 15 to 30 °C.", 0.7)

    def ask(hits: list[Any]) -> Any:
        deps = AnswerDeps(settings=AnswerSettings(mode="extractive", min_similarity=0.3), retriever=Shelf(hits),
                          model=Model("unused [1]."), sink=Sink())
        return answer(deps, AnswerRequest(question="board operating temperature range for a cabinet?"))

    refused = ask([board, printer])
    assert refused.outcome == "not_found" and "quantity_not_in_evidence: temperature" in refused.flags
    shown = ask([printer, board])  # the manual found first states one: shown as evidence, as before
    assert shown.outcome == "evidence_only" and "15 to 30" in shown.answer


@pytest.mark.parametrize(("question", "kinds"), [
    # eval/de-dev: refused as "no passage states a temperature", though the gold page was first and says when
    ("On the ZOE display CLM page, when is the interior heat-exchanger air temperature meaningful?", []),
    ("temperature in the reports seems to lag behind the actual temp, why", []),
    ("Warum ist die Temperatur im Gehäuse so hoch?", []),
    ("Wo messe ich die Ausgangsspannung?", []),
    # ... unless it asks how much as well
    ("Wie lange hält der Zug im Pendelbetrieb, und wo stelle ich das ein?", ["duration"]),
    ("When the board overheats, how hot does the regulator get (temperature)?", ["temperature"]),
    ("What is the maximum temperature?", ["temperature"]),
])
def test_a_question_why_when_or_where_asks_for_no_value(question: str, kinds: list[str]) -> None:
    assert asked_quantities(question) == kinds
