"""A blank line inside a sentence is a wrapped line, not a sentence end.

Some PDFs' text layers put a blank line after every printed line (the Mechaduino manual of eval/dev2:
331 such breaks). Cut there, a sentence was quoted as evidence "As far as the Mechaduino is concerned,
the." and its other half, "two parts are virtually identical.", as another. A blank line still ends
a sentence before a line that starts a new one (a capital, a number, a bullet): headings and list
items stay apart.
"""

from __future__ import annotations

from dataclasses import replace

from gateway.answer.extractive import EVIDENCE, extractive_answer
from ingest.text.sentences import sentence_spans
from retrieval.types import Hit

WRAPPED = ("Note:\n\nMechaduinos purchased between 3/1/2018 and 7/1/2018 used an AS5048A encoder\n\ninstead of "
           "the AS5047D (due to supply availability). As far as the Mechaduino is concerned, the\n\ntwo parts "
           "are virtually identical. However, the as5048a's error\n\nregister has a slightly different address.")


def split(text: str) -> list[str]:
    return [" ".join(text[s:e].split()) for s, e in sentence_spans(text)]


def test_a_wrapped_line_stays_in_its_sentence() -> None:
    assert split(WRAPPED) == [
        "Note:",
        "Mechaduinos purchased between 3/1/2018 and 7/1/2018 used an AS5048A encoder instead of the AS5047D "
        "(due to supply availability).",
        "As far as the Mechaduino is concerned, the two parts are virtually identical.",
        "However, the as5048a's error register has a slightly different address."]


def test_a_blank_line_before_a_new_line_still_ends_the_sentence() -> None:
    assert split("Board Versions\n\nThe 0.2 board adds level shifters\n\n\n2 A peak\n\n• 35 V max") == [
        "Board Versions", "The 0.2 board adds level shifters", "2 A peak", "• 35 V max"]
    assert split("the first line\n\n\nthe same sentence.") == ["the first line the same sentence."]


def test_the_evidence_quotes_the_whole_sentence() -> None:
    hit = Hit(chunk_id="c0", manual="m.pdf", title="Mechaduino Manual", manual_sha256="0" * 64, page=14,
              heading="Board Versions", text=WRAPPED, score=1.0, dense_rank=1, lexical_rank=1, dense_score=0.5)
    # The hand-set score alone: which sentences win is not what this test is about (the learned
    # weights prefer the dated sentence here), only that the quoted one is whole.
    answer = extractive_answer("are the AS5048A and AS5047D encoders the same for the mechaduino?", [hit],
                               replace(EVIDENCE, weights={}))
    assert "concerned, the two parts are virtually identical" in " ".join(answer.split())
    assert "concerned, the." not in answer
