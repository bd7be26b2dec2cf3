"""The units a model's draft is read in: its sentences, as the citation grammar made the model write them.

The support check (gateway.answer.support) holds each of these units against the passage it cites.
"""

from __future__ import annotations

import re

from gateway.answer.citations import CITATION_RE
from ingest.text.sentences import sentence_spans

LIST_MARK_RE = re.compile(r"^\s*(?:\d{1,2}[.)]|[•\-*])\s+")  # a list item's or step's mark opening a sentence

# Under the citation grammar (gateway.answer.grammar) a sentence ends at its citation, end mark or not:
# "... is 1.75mm, as stated in [1] (page 6). [2] (page 4) also mentions ..." is the grammar's
# "... as stated in [1]", "(page 6). [2]", "(page 4) also mentions ... [3]". A draft is read in those
# units; a page note next to a citation ("(page 6)") is the model's decoration of it, not a claim.
_GRAMMAR_BREAK_RE = re.compile(r"\](?=[ \t]+(?:[A-Z]|[1-9]\d?[.)]\s|\((?:pages?|p\.)\s*\d))")
_COPULA_CITED_RE = re.compile(r"\s(?:is|are|was|were|be|to|equals?)\s*:?\s*\[\d+(?:\s*[,;]\s*\d+)*\]$", re.IGNORECASE)
_STEP_NUMBER_RE = re.compile(r"[1-9]\d?[.)]")
_YES_NO_RE = re.compile(r"^\W*(?:yes|no)\W*$", re.IGNORECASE)


def draft_spans(answer: str) -> list[tuple[int, int]]:
    """The draft's sentences: cut after each citation that a new sentence or step follows, then as
    sentence_spans cuts; a step's number ("1.") stays with its step."""
    cuts, s = [], 0
    for m in _GRAMMAR_BREAK_RE.finditer(answer):
        piece = answer[s:m.end()]
        # "Yes, [1] The boards ..." and "The pin for D3 is [1] Pin 9. [2]" are one claim each
        if not _YES_NO_RE.match(CITATION_RE.sub("", piece)) and not _COPULA_CITED_RE.search(piece):
            cuts.append(m.end())  # a piece left empty ("(page 6). [2]") is passed over by the check
            s = m.end()
    out: list[tuple[int, int]] = []
    for a, b in zip([0, *cuts], [*cuts, len(answer)], strict=True):
        held = None
        for s, e in sentence_spans(answer[a:b]):
            if _STEP_NUMBER_RE.fullmatch(answer[a + s:a + e]):
                held = a + s if held is None else held
                continue
            out.append((a + s if held is None else held, a + e))
            held = None
        if held is not None:
            out.append((held, b))
    return out
