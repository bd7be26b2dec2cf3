"""The answer text of the picked evidence: each sentence followed by its citation, a list as a list.

`cited_text` turns extractive's picked (passage number, sentence) pairs into "Do X. [1]", a bulleted item
on a line of its own; a request's max_tokens caps it (approx_tokens: no model is at hand to count).
"""

from __future__ import annotations

import math
import re

from ingest.text.scripts import CJK
from ingest.text.sentences import BULLETS

_BULLET_RE = re.compile(rf"^[{BULLETS}]\s*")
CJK_CHAR_RE = re.compile(f"[{CJK}]")


def approx_tokens(text: str) -> int:
    """About how many tokens a model's tokenizer makes of `text`, with no model at hand: a Chinese,
    Japanese or Korean character one, the rest one per 4 characters (English prose comes to about that
    in the BPE vocabularies of the shipped models; numbers and codes to more)."""
    cjk = len(CJK_CHAR_RE.findall(text))
    return cjk + math.ceil((len(text) - cjk) / 4)


def cited_text(picked: list[tuple[int, str]], max_tokens: int | None = None) -> tuple[str, bool]:
    """The answer text of the picked sentences, each followed by its citation ("Do X. [1]"), a bulleted
    item on a line of its own ("• Do X. [1]") so that the page shows a procedure as a list; and whether it
    was cut short.

    max_tokens (a request's own cap; extractive answers have no model to count with): whole sentences
    while the text stays within about that many tokens (approx_tokens), never a citation cut off its
    sentence; a first sentence longer than that alone keeps its words that fit, then "…" and its citation.
    """
    text, was_item = "", False
    for n, sentence in picked:
        if sentence[-1:] not in ".!?…。！？；：":
            sentence += "."
        bullet = _BULLET_RE.match(sentence)
        body = sentence[bullet.end():] if bullet else sentence
        lead = "• " if bullet else ""
        part = f"{lead}{body} [{n}]"
        joined = text + ("\n" if text and (bullet or was_item) else " " if text else "") + part
        if max_tokens is not None and approx_tokens(joined) > max_tokens:
            if not text:
                text = _first_words(lead, body, f" … [{n}]", max_tokens)
            return text, True
        text, was_item = joined, bool(bullet)
    return text, False


def _first_words(lead: str, body: str, tail: str, max_tokens: int) -> str:
    """The opening words of a sentence (at least one) that fit in max_tokens with `tail` after them."""
    words = body.split()
    keep = 1
    while keep < len(words) and approx_tokens(lead + " ".join(words[:keep + 1]) + tail) <= max_tokens:
        keep += 1
    return lead + " ".join(words[:keep]).rstrip(",;:") + tail
