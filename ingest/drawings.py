"""Drop the drawing from a page's content stream before pypdf looks for its text.

pypdf parses every operator of a content stream in Python to find the text among them. On pages
that are drawings (wiring diagrams, exploded views), nearly all operators draw lines and curves,
and parsing them costs up to 0.4 s per page (docs/bench/experiments/parse_cost.md). The text extractor reads
only text, font, matrix and save/restore operators, so the path operators (with their numeric
operands), colour and line-style operators, and save/transform/restore groups left empty by that,
are cut out here with a regular expression before pypdf parses the stream.

It is conservative: literal strings, hex strings, dictionaries and comments are copied unchanged
(the pattern matches them first, so a "1 2 m" inside a string is never touched); a stream with an
inline image (BI ... ID binary EI) or a literal string the pattern cannot delimit is left whole.
bench/experiments/parse_cost.py checks that extraction gives the same text with and without this step.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pypdf import PdfReader

_WS = rb"[\x00\t\n\x0c\r ]"
_END = rb"(?=[\x00\t\n\x0c\r \[\]()<>{}/%]|\Z)"  # a token ends at white space, a delimiter or the end
_NUM = rb"[-+]?(?:\d+\.?\d*|\.\d+)"
# Operators that take only numbers: path construction (m l c v y re), line style (w J j M i) and
# colour (g G rg RG k K); and those without operands: path closing and painting, clipping (h S s f F
# f* B B* b b* n W W*). None of them changes what text is shown or where.
_DRAW_OP = (rb"(?:(?:" + _NUM + _WS + rb"+){1,6}(?:m|l|c|v|y|re|w|J|j|M|i|rg|RG|g|G|k|K)" + _END
            + rb"|(?:h|S|s|f\*?|F|B\*?|b\*?|n|W\*?)" + _END + rb")")
# A save/restore with nothing inside but an optional transformation: a no-op once the drawing is gone.
_EMPTY_GROUP = rb"q" + _WS + rb"+(?:(?:" + _NUM + _WS + rb"+){6}cm" + _WS + rb"+)?Q" + _END
_STRING = rb"\((?:[^()\\]|\\.|\((?:[^()\\]|\\.|\((?:[^()\\]|\\.)*\))*\))*\)"  # up to 3 levels of ( )
_KEEP = rb"(<<|>>|" + _STRING + rb"|<[0-9A-Fa-f\x00\t\n\x0c\r ]*>|%[^\r\n]*)|(\()"
_BEFORE = rb"(?<![^\x00\t\n\x0c\r ])"  # at the start or after white space
_DRAWING = re.compile(_KEEP + rb"|" + _BEFORE + rb"(" + _DRAW_OP + rb"(?:" + _WS + rb"+" + _DRAW_OP + rb")*)",
                      re.S)
_EMPTY = re.compile(_KEEP + rb"|" + _BEFORE + rb"(" + _EMPTY_GROUP + rb")", re.S)
_INLINE_IMAGE = re.compile(_BEFORE + rb"BI" + _END)
_MAX_PASSES = 16  # empty groups nested deeper than this stay (harmless, only slower)


class _Undelimited(Exception):
    """A "(" that does not open a string the pattern can delimit: leave the stream as it is."""


def _cut(match: re.Match[bytes]) -> bytes:
    if match.group(2) is not None:
        raise _Undelimited
    kept = match.group(1)
    return kept if kept is not None else b" "


def drop_drawing(data: bytes) -> bytes | None:
    """The stream without its drawing operators, or None where it is safer to leave it whole."""
    if _INLINE_IMAGE.search(data):
        return None
    try:
        out = _DRAWING.sub(_cut, data)
        for _ in range(_MAX_PASSES):
            shorter = _EMPTY.sub(_cut, out)
            if shorter == out:
                break
            out = shorter
    except _Undelimited:
        return None
    return out


def strip_drawings(reader: PdfReader) -> int:
    """Replace each page's content stream by one without its drawing; returns pages changed.

    Only the in-memory page objects change (the file is never written). A page whose contents
    cannot be read or filtered keeps them, and pypdf reports it as it would have.
    """
    from pypdf.generic import DecodedStreamObject, NameObject

    changed = 0
    for page in reader.pages:
        try:
            contents = page.get_contents()
            if contents is None:
                continue
            data = contents.get_data()
            lighter = drop_drawing(data)
        except Exception:  # noqa: BLE001 - extraction reports a broken page; this step just skips it
            continue
        if lighter is None or len(lighter) == len(data):
            continue
        stream = DecodedStreamObject()
        stream.set_data(lighter)
        page[NameObject("/Contents")] = stream
        changed += 1
    return changed
