"""The QA question set is the yardstick for retrieval and replay: these checks keep it honest
(every gold page really holds its evidence, ids are stable keys, all question types are covered)."""

from __future__ import annotations

import json
import re
from collections import Counter
from functools import cache
from pathlib import Path

import pytest

QUESTIONS = Path(__file__).resolve().parent.parent / "sample_manuals" / "questions.jsonl"
TYPES = {"spec", "procedure", "troubleshooting", "safety"}
FIELDS = {
    "id": str,
    "question": str,
    "manual": (str, type(None)),
    "answerable": bool,
    "pages": list,
    "answer": str,
    "evidence": str,
    "type": str,
}
ID_PREFIX = {"voron": "voron0_setup_guide.pdf", "lcp": "noaa_lcp_pistonboard_user_manual.pdf"}


def _norm(text: str) -> str:
    return " ".join(text.split())


@cache
def _page_texts(pdf: Path) -> tuple[str, ...]:
    from pypdf import PdfReader

    return tuple(_norm(page.extract_text() or "") for page in PdfReader(str(pdf)).pages)


def test_every_line_is_a_json_object() -> None:
    lines = QUESTIONS.read_text(encoding="utf-8").splitlines()
    assert lines, "questions.jsonl is empty"
    for number, line in enumerate(lines, 1):
        assert line.strip(), f"line {number} is blank"
        assert isinstance(json.loads(line), dict), f"line {number} is not a JSON object"


def test_fields_and_types(questions: list[dict]) -> None:
    for q in questions:
        assert set(q) == set(FIELDS), f"{q.get('id')}: fields {sorted(q)}"
        for name, kind in FIELDS.items():
            assert isinstance(q[name], kind), f"{q['id']}: {name} has type {type(q[name]).__name__}"
        assert q["type"] in TYPES, f"{q['id']}: unknown type {q['type']!r}"
        assert q["question"].strip(), f"{q['id']}: empty question"
        assert all(isinstance(p, int) and not isinstance(p, bool) for p in q["pages"]), q["id"]


def test_ids_unique_and_match_manual(questions: list[dict]) -> None:
    counts = Counter(q["id"] for q in questions)
    assert not [i for i, n in counts.items() if n > 1], "duplicate ids"
    for q in questions:
        match = re.fullmatch(r"(voron|lcp|none)-(\d{2,})", q["id"])
        assert match, f"bad id {q['id']!r}"
        prefix = match.group(1)
        if prefix == "none":
            assert q["answerable"] is False, q["id"]
        else:
            assert q["answerable"] is True and q["manual"] == ID_PREFIX[prefix], q["id"]


def test_coverage(questions: list[dict]) -> None:
    answerable = [q for q in questions if q["answerable"]]
    assert len(answerable) >= 30
    assert len(questions) - len(answerable) >= 5
    per_type = Counter(q["type"] for q in answerable)
    assert all(per_type[t] >= 5 for t in TYPES), per_type
    per_manual = Counter(q["manual"] for q in answerable)
    assert set(per_manual) == set(ID_PREFIX.values()) and min(per_manual.values()) >= 10, per_manual


def test_unanswerable_rows_are_empty(questions: list[dict]) -> None:
    for q in (q for q in questions if not q["answerable"]):
        assert (q["manual"], q["pages"], q["answer"], q["evidence"]) == (None, [], "", ""), q["id"]


def test_answerable_rows_point_at_real_pages(questions: list[dict], sample_dir: Path) -> None:
    for q in (q for q in questions if q["answerable"]):
        pdf = sample_dir / q["manual"]
        assert pdf.is_file(), f"{q['id']}: no manual {q['manual']}"
        count = len(_page_texts(pdf))
        assert q["pages"], f"{q['id']}: no gold pages"
        assert len(set(q["pages"])) == len(q["pages"]), f"{q['id']}: repeated page"
        assert all(1 <= p <= count for p in q["pages"]), f"{q['id']}: pages {q['pages']} outside 1..{count}"
        assert q["answer"].strip(), f"{q['id']}: empty answer"
        assert 20 <= len(q["evidence"]) <= 150, f"{q['id']}: evidence length {len(q['evidence'])}"


@pytest.mark.parametrize("manual", sorted(ID_PREFIX.values()))
def test_evidence_is_verbatim_on_first_gold_page(
    questions: list[dict], sample_dir: Path, manual: str
) -> None:
    texts = _page_texts(sample_dir / manual)
    rows = [q for q in questions if q["manual"] == manual]
    assert rows
    wrong = [
        (q["id"], q["pages"][0], q["evidence"])
        for q in rows
        if _norm(q["evidence"]) not in texts[q["pages"][0] - 1]
    ]
    assert not wrong, f"evidence not found on its first gold page: {wrong}"


def test_evidence_check_would_catch_a_wrong_page(questions: list[dict], sample_dir: Path) -> None:
    # Guards the check above against passing vacuously (e.g. every page text empty).
    q = next(q for q in questions if q["answerable"])
    texts = _page_texts(sample_dir / q["manual"])
    others = [t for i, t in enumerate(texts, 1) if i not in q["pages"]]
    assert others and not any(_norm(q["evidence"]) in t for t in others)
