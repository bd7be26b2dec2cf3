"""A sentence as the evidence quotes it: on one line, cut to fit, and what is not worth quoting.

`clean_sentence` puts a passage's sentence on one line (words the PDF's line ends broke whole again) and
cuts an over-long one: at a word after MAX_SENTENCE_CHARS, or, for a how-to question, where a sentence
or a step ends (EvidenceParams.procedure_chars); `trim_to_window` keeps the stretch around the question's
terms. A figure's caption alone, a bare web address, and such a line before a sentence are not quoted
(is_caption, is_bare_link, past_caption_line).
"""

from __future__ import annotations

import re

from gateway.answer.reflow import unwrap_words
from ingest.text.scripts import HAN
from ingest.text.sentences import BULLETS
from ingest.text.terms import content_terms, word_count

MAX_SENTENCE_CHARS = 400
# Where a how-to's long sentence may be cut (EvidenceParams.procedure_chars): a sentence's end inside a
# quoted "sentence" (the splitter keeps "... precision.\nshell>set cal 1" in one span, as no capital
# follows), a line break before a step or a list item, and the line break after a command line
# ("shell>set cal 1", "$ make").
_SENTENCE_END_RE = re.compile(r"(?<=[.!?])(?<!e\.g\.)(?<!i\.e\.)(?<!\bvs\.)(?<!\bfig\.)\s|(?<=[。！？；])", re.I)
_STEP_LINE_RE = re.compile(rf"^\s*(?:[{BULLETS}*\-–]\s|\(?\d{{1,2}}[.)]\s|step\s+\d)", re.I)
_COMMAND_LINE_RE = re.compile(r"^\s*[\w\-~/]{0,16}[>$#]\s?\S")
# A figure's caption on its own ("Figure 27: Finished breadboard hub.", "Figure 43 - CyControl program
# (Firmware update step 1).") names a picture the text cannot show: it answers nothing. A table's title
# is kept, as its rows follow it in the same "sentence".
# German and Chinese captions read "Abbildung 4: ...", "Abb. 3 ...", "Bild 17 ...", "图 7.3: 压缩烧写模式" (a Chinese
# caption is a phrase: a sentence that names a figure, "图 3.1 中的按键用于复位，...", has a clause mark in it).
_CAPTION_RE = re.compile(
    rf"^(?:fig(?:ure)?\.?|abbildung|abb\.|bild|图)\s*\d+(?:[.\-–]\d+)*\s*[:.\-–：]?(?:\s|(?=[{HAN}]))", re.I)
_CLAUSE_MARKS = re.compile(r"[，。；！？,;]")
_HAN_RE = re.compile(f"[{HAN}]")
CAPTION_MAX_WORDS = 12
# A web address with a word or two around it ("www.example.com/actuator", "See https://...") points
# elsewhere and answers nothing here; "Download the firmware from https://..." says what to do: kept.
_URL_RE = re.compile(r"(?:https?://|www\.)\S+", re.I)
URL_MIN_OTHER_WORDS = 4


def clean_sentence(sentence: str, steps_within: int = 0) -> str:
    """The sentence on one line: words the PDF's line ends broke whole again ("con-\nnector"), the
    rest of its line breaks spaces (gateway.answer.reflow), at most MAX_SENTENCE_CHARS, cut at a word.

    steps_within (a how-to question's EvidenceParams.procedure_chars): up to that many characters
    instead, cut where a sentence or a step ends (_step_ends), then "…"; at a word only when its first
    sentence or step alone is longer."""
    text = unwrap_words(sentence)
    one_line = " ".join(text.split())
    limit = steps_within or MAX_SENTENCE_CHARS
    if len(one_line) <= limit:
        return one_line
    if steps_within:
        whole = [cut for cut in (" ".join(text[:end].split()) for end in _step_ends(text)) if len(cut) <= limit]
        if whole:
            return whole[-1] + " …"
    return one_line[:limit].rsplit(" ", 1)[0] + " …"


def _step_ends(text: str) -> list[int]:
    """Where a sentence or a step ends in text (see _SENTENCE_END_RE), in order."""
    ends = {m.start() for m in _SENTENCE_END_RE.finditer(text)}
    at = 0
    lines = text.split("\n")
    for a, b in zip(lines, lines[1:], strict=False):
        at += len(a)
        if _COMMAND_LINE_RE.match(a) or _STEP_LINE_RE.match(b) or _COMMAND_LINE_RE.match(b):
            ends.add(at)
        at += 1
    return sorted(ends)


def trim_to_window(sentence: str, want: set[str], words: int) -> str:
    """The `words`-word stretch of an over-long "sentence" (a table row run, a spec list) that holds
    the most question terms, marked with "…" where it was cut; shorter sentences as they are."""
    tokens = sentence.split()
    if words <= 0 or len(tokens) <= words:
        return sentence
    hits = [1 if content_terms(t) & want else 0 for t in tokens]
    best, start = sum(hits[:words]), 0
    run = best
    for i in range(1, len(tokens) - words + 1):
        run += hits[i + words - 1] - hits[i - 1]
        if run > best:
            best, start = run, i
    first = next(i for i in range(start, start + words) if hits[i]) if best else start
    start = max(0, min(first - 2, len(tokens) - words))  # the terms lead, the value after them stays in
    window = " ".join(tokens[start:start + words])
    return ("… " if start else "") + window.rstrip(" …") + (" …" if start + words < len(tokens) else "")


def is_caption(sentence: str) -> bool:
    """A figure caption and nothing else (a short "Figure 3: ..." / "Fig. 2-7 ...")."""
    if _CAPTION_RE.match(sentence) is None or len(sentence.split()) > CAPTION_MAX_WORDS:
        return False
    return not sentence.startswith("图") or _CLAUSE_MARKS.search(sentence.rstrip("。.")) is None


def is_bare_link(sentence: str) -> bool:
    """A web address and fewer than URL_MIN_OTHER_WORDS other words."""
    rest = _URL_RE.sub(" ", sentence)
    return rest != sentence and word_count(rest) < URL_MIN_OTHER_WORDS


def past_caption_line(text: str, s: int, e: int) -> int:
    """Where the sentence text[s:e] starts once a figure's caption (or a bare web address) on its own
    first line is passed ("Figure 6: MSP-FET Emulation Tool\nThere is a 10 pins female connector ..."
    starts at "There")."""
    cut = text.find("\n", s, e)
    rest = text[cut:e].strip() if cut >= 0 else ""
    first = " ".join(text[s:cut].split())
    # the next line must open a sentence: "Figure 5 shows the parts\nthat need sanding." is one sentence (a
    # Chinese line has no capital: after a caption, which is a phrase, its next line is taken as a new one)
    opens = rest[:1].isupper() or _HAN_RE.match(rest) is not None
    if not opens or not (is_caption(first + " ") or is_bare_link(first)):
        return s
    s = cut + 1
    while s < e and text[s].isspace():
        s += 1
    return s
