"""Quotes as a phone shows them: the PDF's printed line ends joined where they only wrap a sentence.

A PDF's text layer ends every printed line with a line break ("This machine belongs to Laser Class 1,
according to EN\\n60825 standard."). The cards keep a quote's line breaks (a list, a pin map, a shell
session are lines), so a quote shown as extracted is ragged on a narrow screen. `reflow` joins a break
that only wraps a line, and keeps one that means something:

- joined: the break after a line of a word or two (plain words) that a lower-case word goes on from
  (a text layer that puts every word or two on a line of its own: "Clean" + "the Printer frequently.");
- kept: a blank line (a paragraph), a break before a list item ("• ", "- ", "2. ", "(b) "), before a
  "label: value" line or code ("ser: Get Serial Number", "shell>fwd", "# make"), after a line ending a
  sentence or opening a list (". ! ? : ;"), after a heading or a label (its words capitalised: "2.4.1.
  Peripheral Pinout", "4x Small Clamps"), after a short line (shorter than WRAP_SHARE of the passage's
  longest line of prose, LOWER_SHARE before a lower-case continuation) or one of fewer than MIN_WORDS
  words, and after a row ending in a symbol ("Red (b) → ACTUATOR_POWER+") or a number before another
  number ("0x00 to 0x07" / "0xF0 to 0xF7");
- joined with a space: the rest ("... according to EN" + "60825 standard." -> one line);
- joined without one: a word hyphenated at the line end ("con-\\nnector" -> "connector", as ingest joins
  it: lower case on both sides; "Raspberry-\\nPi" keeps its hyphen), and a wrapped line of Chinese or
  Japanese (written without spaces: "波特率为" + "115200，" -> "波特率为115200，");
- a sentence a code comment wraps over lines that each begin "// " (a manual that writes its steps as
  comments: "烧录到FPGA 中" + "// 去之后FPGA 不能掉电") joined by the same rules, the "// " going too.

The first rule ("Clean" + "the Printer frequently.") is `join_short_lines` (EvidenceParams.join_short_lines,
on as shipped; bench/experiments/answer_first.py measures the quotes with it off too).

`reflow` returns the new text and where each index of the old text went (length len(text) + 1), so
that spans found in the passage as indexed (gateway.answer.citations) still point at their sentences.
`unwrap_words` is the width-free part, for a sentence quoted on one line (gateway.answer.extractive).
"""

from __future__ import annotations

import re

from ingest.text.scripts import HAN, KANA
from ingest.text.sentences import BULLETS

WRAP_SHARE = 0.6  # a line this long (share of the passage's longest) ended because the column did
LOWER_SHARE = 0.4  # ... and this long, when the next line goes on in lower case
MIN_WORDS = 3  # a line of fewer words is a label, a cell or a list entry, not wrapped prose
COMMENT = "//"  # a line of a code comment; two of them wrap one sentence as prose lines do

_ITEM_RE = re.compile(rf"^(?:[{BULLETS}*\-–]\s|\d{{1,3}}[.)]\s|\(?[a-zA-Z0-9]\)\s)")
_FIELD_RE = re.compile(r"^[^\s:]{1,24}:\s+\S")  # "ser: Get Serial Number", "DEBUG: ..."
_SMALL_WORDS = frozenset("a an and as at by for in of on or the to with".split())
_WORDLIKE_RE = re.compile(r"[\w'’\"“”‘(),.;:/%°+\-–，。、；：！？（）「」《》]+")  # prose (not "shell>", "#", "|")
_ENDS = ".!?:;。！？：；"
_PLAIN_WORD_RE = re.compile(r"[^\W\d_][\w'’]*,?")  # a word, maybe with its comma: no code, no number
_OPENERS = "(\"'“‘"
_NO_SPACE_RE = re.compile(f"[{HAN}{KANA}]")  # written without spaces between words
_BROKEN_WORD_RE = re.compile(r"(?<=[^\W\d_])-[ \t]*\n[ \t]*(?=[^\W\d_])")
_BROKEN_CJK_RE = re.compile(f"(?<=[{HAN}{KANA}])[ \t]*\n[ \t]*(?=[{HAN}{KANA}])")
_BROKEN_CJK_COMMENT_RE = re.compile(f"(?<=[{HAN}{KANA}])[ \t]*\n[ \t]*//[ \t]*(?=[{HAN}{KANA}])")


def unwrap_words(text: str) -> str:
    """Words the PDF's line ends broke, whole again: "con-\\nnector" -> "connector", "Raspberry-\\nPi" ->
    "Raspberry-Pi", Chinese or Japanese characters joined without a space, also across the "// " of a
    comment that goes on ("烧录到FPGA 中\\n// 去之后"); other breaks as they are."""
    def word(m: re.Match[str]) -> str:
        before, after = text[m.start() - 1], text[m.end()]
        return "" if before.islower() and after.islower() else "-"

    def comment(m: re.Match[str]) -> str:
        whole = m.string
        line = whole[whole.rfind("\n", 0, m.start()) + 1:m.start()]
        return "" if _comment(line) is not None else m.group(0)

    return _BROKEN_CJK_RE.sub("", _BROKEN_CJK_COMMENT_RE.sub(comment, _BROKEN_WORD_RE.sub(word, text)))


def _join(a: str, b: str, width: int, join_short_lines: bool = True) -> str | None:
    """What the break between lines a and b becomes: " ", "" or "-" (joined), None (kept)."""
    if not a or not b or _ITEM_RE.match(b) or _FIELD_RE.match(b) or a[0] in "#$>":
        return None
    first_token = b.split()[0]
    if not _WORDLIKE_RE.fullmatch(first_token):
        return None
    head = b.lstrip(_OPENERS)[:1]
    if a[-1] == "-" and len(a) > 1 and a[-2].islower() and head.isalpha():
        if head.islower():
            return "-"  # a word broken at the line end: the hyphen goes too
        return "" if len(a) >= WRAP_SHARE * width and not _title_like(a) else None
    if a[-1] in _ENDS:
        return None
    share = len(a) / width if width else 0.0
    if _NO_SPACE_RE.match(a[-1]) or _NO_SPACE_RE.match(b[0]):  # Chinese or Japanese on either side
        joinable = (_NO_SPACE_RE.match(a[-1]) or a[-1].isalnum() or a[-1] in "，、") and \
            (_NO_SPACE_RE.match(b[0]) or b[0].isalnum())
        return "" if joinable and share >= WRAP_SHARE else None
    if len(a.split()) < MIN_WORDS:
        # a line of a word or two that a lower-case word goes on from ("Clean" + "the Printer frequently."):
        # a text layer that broke a sentence into short lines, not a label, a cell or code ("set -e" + "if")
        plain = join_short_lines and head.islower() and all(_PLAIN_WORD_RE.fullmatch(w) for w in a.split())
        return " " if plain else None
    if head.islower():
        return " " if share >= LOWER_SHARE else None
    if head.isdigit() and not (a[-1].isalpha() or a[-1] == ","):
        return None  # "0x00 to 0x07" / "0xF0 to 0xF7": rows of values, not a wrapped sentence
    if (head.isupper() or head.isdigit()) and share >= WRAP_SHARE and not _title_like(a) \
            and (a[-1].isalnum() or a[-1] == ","):
        return " "
    return None


def _title_like(line: str) -> bool:
    """A heading, a label or a list entry: every word but a few small ones starts upper case or with a
    digit ("2.4.1. Peripheral Pinout", "4x Small Clamps", "USER MANUAL OF THE FABULASER MINI")."""
    words = [w for w in re.findall(r"[^\W_][\w'’\-]*", line) if w.lower() not in _SMALL_WORDS]
    return bool(words) and all(w[0].isupper() or w[0].isdigit() for w in words)


def _width(lines: list[str]) -> int:
    """The passage's column: its longest line of prose (a heading or a URL may be longer)."""
    prose = [len(x) for x in (line.strip() for line in lines)
             if len(x.split()) >= MIN_WORDS and not _title_like(x)]
    return max(prose or [len(line.strip()) for line in lines] or [0])


def _comment(line: str) -> str | None:
    """The words of a "// " comment line (a manual that writes its instructions as code comments), else None."""
    line = line.strip()
    return line[len(COMMENT):].strip() if line.startswith(COMMENT) else None


def reflow(text: str, join_short_lines: bool = True) -> tuple[str, list[int]]:
    """(text with its wrapped line ends joined, where each index of `text` went; see the module doc).

    join_short_lines: a line of a word or two joins the lower-case line after it (the module doc)."""
    lines = text.split("\n")
    width = _width(lines)
    edits: list[tuple[int, int, str]] = []  # (start, end, replacement) in text
    offset = 0
    for a, b in zip(lines, lines[1:], strict=False):
        nl = offset + len(a)
        offset = nl + 1
        said, goes_on = _comment(a), _comment(b)
        in_comment = said is not None and goes_on is not None
        if in_comment:  # a comment wrapped over "// " lines: joined as prose is
            joined = _join(said or "", goes_on or "", width, join_short_lines)
        else:
            joined = _join(a.strip(), b.strip(), width, join_short_lines)
        if joined is None:
            continue
        start, end = nl, nl + 1
        while start > 0 and text[start - 1] in " \t":
            start -= 1
        while end < len(text) and text[end] in " \t":
            end += 1
        if in_comment:
            end += len(COMMENT)
            while end < len(text) and text[end] in " \t":
                end += 1
        if joined == "-":
            edits.append((start - 1, end, ""))  # the hyphen and the break
        else:
            edits.append((start, end, joined))
    return _rebuild(text, edits)


def _rebuild(text: str, edits: list[tuple[int, int, str]]) -> tuple[str, list[int]]:
    """The text with the (ordered, disjoint) edits made, and where each old index went."""
    pieces: list[str] = []
    where = [0] * (len(text) + 1)
    length = 0
    pos = 0
    for start, end, replacement in edits:
        for i in range(pos, start):
            where[i] = length + (i - pos)
        pieces.append(text[pos:start])
        length += start - pos
        for i in range(start, end):
            where[i] = length
        pieces.append(replacement)
        length += len(replacement)
        pos = end
    for i in range(pos, len(text) + 1):
        where[i] = length + (i - pos)
    pieces.append(text[pos:])
    return "".join(pieces), where
