"""An answer's flags: one closed set of names, each flag its text ("name" or "name: detail") with its
typed parts, and the API's structured form beside the text (gateway/answer/flags.py, docs/api.md)."""

from __future__ import annotations

import copy
import json
import pickle
import re
from dataclasses import fields
from pathlib import Path

from gateway.answer.flags import FLAGS, AnswerFlag, flag_details
from gateway.answer.result import AnswerResult
from gateway.records.answer_rows import flag_parts

ROOT = Path(__file__).resolve().parents[1]


def test_a_flag_is_its_text_with_its_parts() -> None:
    weak = AnswerFlag("weak_evidence", "best similarity 0.31")
    assert weak == "weak_evidence: best similarity 0.31" and weak.name == "weak_evidence"
    assert weak.detail == "best similarity 0.31"
    plain = AnswerFlag("timeout")
    assert plain == "timeout" and plain.detail == "" and "timeout" in [plain]
    # an empty detail keeps the separator, as the f-strings it replaced wrote it
    assert AnswerFlag("unqualified_model", "") == "unqualified_model: "
    for flag in (weak, plain, AnswerFlag("unqualified_model", "")):
        for copied in (copy.deepcopy(flag), pickle.loads(pickle.dumps(flag))):
            assert copied == flag and (copied.name, copied.detail) == (flag.name, flag.detail)
    assert json.dumps([weak, plain]) == '["weak_evidence: best similarity 0.31", "timeout"]'


def test_the_structured_form_and_the_logs_reading_of_the_text_agree() -> None:
    flags = [AnswerFlag("dropped_invalid_citations", str([7, 9])), AnswerFlag("no_valid_citation"),
             AnswerFlag("quantity_not_in_evidence", "voltage, current")]
    assert flag_details(flags) == [flag_parts(str(f)) for f in flags] == [
        {"name": "dropped_invalid_citations", "detail": "[7, 9]"}, {"name": "no_valid_citation", "detail": ""},
        {"name": "quantity_not_in_evidence", "detail": "voltage, current"}]


def test_an_answer_carries_both_forms_and_stores_one() -> None:
    res = AnswerResult(id="a", time="t", question="q", scope=[])
    res.flags.append(AnswerFlag("named_manual_first", "rvpc"))
    assert res.flag_details == [{"name": "named_manual_first", "detail": "rvpc"}]  # read from `flags`
    res.flags.append(AnswerFlag("timeout"))
    data = res.to_dict()
    assert data["flags"] == ["named_manual_first: rvpc", "timeout"]
    assert all(type(f) is str for f in data["flags"])  # plain text on the wire (msgspec encodes no subclass)
    assert data["flag_details"][1] == {"name": "timeout", "detail": ""}
    assert "flag_details" in [f.name for f in fields(AnswerResult)] and "flag_details" not in vars(res)


def test_every_flag_the_page_names_is_a_flag() -> None:
    page = (ROOT / "ui/static/app.js").read_text(encoding="utf-8")
    sets = re.findall(r"const (?:SILENT_FLAGS|ABOUT_THE_DRAFT) = new Set\(\[(.*?)\]\)", page, re.S)
    named = {n for s in sets for n in re.findall(r'"([a-z_]+)"', s)}
    named |= set(re.findall(r'f\.name === "([a-z_]+)"', page))
    for strings in (ROOT / "ui/templates").glob("strings.*.json"):
        named |= {k.removeprefix("tech.flag.") for k in json.loads(strings.read_text(encoding="utf-8"))
                  if k.startswith("tech.flag.")}
    assert len(named) > 15 and named <= set(FLAGS), named - set(FLAGS)
