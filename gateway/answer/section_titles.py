"""Section titles inside a passage's text, so that evidence quotes what a section says, not its name.

PDF text puts titles on a line of their own ("INSTALLING THE WATER CHILLER"), glues a run of them
together (a contents area), or, in numbered manuals, puts a subsection's number and title on the same
line as its first sentence ("2.3.2.2 Icom Radio Configuration If using an Icom radio, Hamlib ...").
The card shows the section heading; quoted as an answer a title says nothing.
"""

from __future__ import annotations

import re

from ingest.headings import cjk_heading
from ingest.text.sentences import BULLETS
from ingest.text.terms import has_cjk

# A list item opening a sentence: a bullet or "Step 3"
ITEM_RE = re.compile(rf"^(?:step\s+\d|[{BULLETS}]|[*-]\s)", re.IGNORECASE)
_WORD_RE = re.compile(r"[A-Za-z][A-Za-z'’\-]*")
_VALUE_RE = re.compile(r"(?<![A-Za-z\d])\d+(?:[.,]\d+)*(?![A-Za-z\d])")  # a number, not a code's digits (E3)
# "6.3 ", "16.10": a numbered section's number, glued to its title or not
_SECTION_NUMBER_RE = re.compile(r"^\d+(?:\.\d+)+\.?\s*(?=[A-Za-z])")
# "2.9.3 ", "2.3.2.2 ": three levels or more, which no value ("3.3 V") and no step ("2.") looks like
# (used with .match, which anchors it where it starts)
_DEEP_SECTION_RE = re.compile(r"\d+(?:\.\d+){2,}\.?\s*(?=[A-Za-z(])")
# A section's number alone ("4.5.2.", "2.1"): the sentence splitter cuts it off the title it numbers
# ("4.5.2. Calibration\nFirst time use ..." is "4.5.2." and "Calibration\nFirst time use ..."), so the
# line that opens the span after it is that section's title, one word or more.
_NUMBER_ALONE_RE = re.compile(r"^\d+(?:\.\d+)+\.?$")
# the number of the section heading the index found ("2. Feeding", "4.5.2. Calibration"): a heading's
# own, so one level is a section's number too there, not a step's
_HEADING_NUMBER_RE = re.compile(r"^\d+(?:\.\d+)*\.?\s*(?=[^\W\d_])")
# small words a title keeps lowercase ("Removal of the Cover")
_TITLE_GLUE = frozenset("a an and at by for from in of on or the to with".split())


def _folded(text: str) -> str:
    return " ".join(text.lower().split())


def is_section_number(fragment: str) -> bool:
    """A section's number and nothing else ("4.5.2.", "2.1"; not a step's "3.")."""
    return _NUMBER_ALONE_RE.match(fragment.strip()) is not None


def is_heading(raw: str, heading: str = "", numbered: bool = False) -> bool:
    """A title or a run of titles ("INSTALLING THE WATER CHILLER", "2.5.2 Instant Capture", "Klipper
    InstallationReferences: Klipper Installation Instructions ..."): capitalised words, no number but a
    section's own (a code like "E3" may be there), no closing punctuation; or the section heading the
    index found for the passage (`heading`), numbered or not ("16.4 Hamlib does not work with my Icom
    radio"), with its number or without ("Calibration" in "4.5.2. Calibration"). A deeply numbered title
    may be one word ("2.9.3 Open"), and so may one whose number came just before it (`numbered`: the
    sentence before was a section's number alone, is_section_number)."""
    text = raw.strip()
    bare = _SECTION_NUMBER_RE.sub("", text)
    titles = {_folded(heading), _folded(_HEADING_NUMBER_RE.sub("", heading.strip()))} if heading else set()
    if titles & {_folded(text), _folded(bare)}:
        return True
    if has_cjk(text):  # no capitals to read: only a numbered title (第二章 技术参数) is one
        return cjk_heading(text)
    if not bare or bare[-1] in ".!?;)\"”" or _VALUE_RE.search(bare) or ITEM_RE.match(bare):
        return False
    words = _WORD_RE.findall(bare)
    least = 1 if numbered or _DEEP_SECTION_RE.match(text) else 2
    return len(words) >= least and sum(w[0].isupper() for w in words) >= 0.7 * len(words)


# What closes a quotation or a bracket: a line that the next one opens with such a mark is not a whole title
# ("Im Bereich «Geburtstage\n» können bis zu fünf Termine ..." quoted as "» können ...", eval/de-dev3).
_CLOSERS = frozenset("»«”“\"’)]）」』】")


def past_title_lines(text: str, s: int, e: int, heading: str = "", numbered: bool = False) -> int:
    """Where the sentence text[s:e] starts once title lines glued before it are passed ("INSTALLING THE
    WATER CHILLER\\nFill the chiller ..." is one span to the sentence splitter). numbered: the sentence
    before was a section's number alone, so a first line of one title word is a title too ("Calibration")."""
    while True:
        cut = text.find("\n", s, e)
        if cut < 0 or not is_heading(text[s:cut], heading, numbered) or not text[cut:e].strip():
            return s
        if text[cut:e].lstrip()[:1] in _CLOSERS:  # the line broke inside a quotation or a bracket: no title
            return s
        numbered = False
        s = cut + 1
        while s < e and text[s].isspace():
            s += 1


def past_glued_title(text: str, s: int, e: int) -> int:
    """Where the sentence text[s:e] starts once a deeply numbered title on its own line is passed
    ("2.3.1.1 Receive Only (One Sound Card) For this setup, you just need ..." starts at "For"): the
    title is the run of capitalised words (and bracketed groups) after the number; the sentence, the
    last capitalised word of that run, which a lowercase word follows. Unchanged when the line does not
    open with such a number, or when that shape is not there."""
    number = _DEEP_SECTION_RE.match(text, s, e)
    if number is None:
        return s
    line_end = text.find("\n", s, e)
    tokens = list(re.finditer(r"\S+", text[number.end():line_end if line_end >= 0 else e]))
    bracket = False
    for i, token in enumerate(tokens):
        word = token.group()
        opens, closes = word.startswith("("), word.endswith(")")
        capital = word.lstrip("(\"“'")[:1].isupper()
        if bracket or opens:
            bracket = not closes
            continue
        if capital or word.lower() in _TITLE_GLUE and _capital_next(tokens, i + 1):
            continue
        # a lowercase word: the capitalised word before it opens the sentence, if a title is left before that
        opener = i - 1
        if opener < 1 or not tokens[opener].group()[:1].isupper() or tokens[opener - 1].group().lower() in _TITLE_GLUE:
            return s
        return number.end() + tokens[opener].start()
    return s


def _capital_next(tokens: list[re.Match[str]], i: int) -> bool:
    """Whether the first word from tokens[i] on that is not a title's small word is capitalised."""
    for token in tokens[i:]:
        word = token.group()
        if word.lower() not in _TITLE_GLUE:
            return word.lstrip("(\"“'")[:1].isupper()
    return False
