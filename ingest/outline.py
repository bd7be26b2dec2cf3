"""A PDF's own outline (its bookmarks): the section headings its author declared, with their pages.

Heading heuristics guess from line shapes and get tables wrong (a bill-of-materials row looks like
a Title Case line). Many manuals exported from a word processor carry an outline; where one
exists, its titles are the headings, found again in the page text by `matches`. This runs inside
the sandboxed parse worker (ingest.pdf); titles come from the file, so they are tidied and capped.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ingest.labels import one_line
from ingest.text.scripts import HAN, KANA

if TYPE_CHECKING:
    from pypdf import PdfReader

MAX_ENTRIES = 2000  # a manual's outline is at most a few hundred entries; the rest is not kept
MAX_TITLE_CHARS = 160
MIN_WRAP_CHARS = 8  # a line must hold at least this much of a title to be its first line
_NUMBER = re.compile(r"^(?:(?:chapter|section|part|appendix)\s+)?(?:\d{1,3}(?:\.\d{1,3})*|[a-z])(?:[.):]|\s)\s*")
_NON_WORD = re.compile(r"[\W_]+")
# Scripts written without spaces between words: Han, kana, Thai, Lao, Tibetan, Myanmar, Khmer. A PDF's
# text layer puts spaces where its author typed none (pypdf: "2.3 FPGA 开发板的硬件指标" for the bookmark
# "2.3 FPGA开发板的硬件指标", a space at each change of font or script, or between any two glyphs), so a
# space beside one of their characters is no word boundary and is left out of the key. Korean (Hangul)
# spaces its words and keeps them.
UNSPACED = HAN + KANA + "\u0e00-\u0eff\u0f00-\u0fff\u1000-\u109f\u1780-\u17ff\u19e0-\u19ff"
_UNSPACED_GAP = re.compile(f"(?<=[{UNSPACED}]) +| +(?=[{UNSPACED}])")


def read_outline(reader: PdfReader, page_count: int) -> list[tuple[int, str]]:
    """(page, title) of every outline entry that names a page of this PDF, in outline order.

    A damaged outline never fails an ingest: whatever could be read is returned (often nothing).
    """
    from pypdf.generic import Destination

    found: list[tuple[int, str]] = []

    def walk(items: Sequence[object], depth: int) -> None:
        for item in items:
            if len(found) >= MAX_ENTRIES or depth > 16:
                return
            if isinstance(item, list):
                walk(item, depth + 1)
                continue
            if not isinstance(item, Destination):  # not an entry: nothing it could point to
                continue
            try:
                number = reader.get_destination_page_number(item)
            except MemoryError:
                raise
            except Exception:  # noqa: BLE001 - an entry pointing nowhere is skipped
                continue
            if number is None:
                continue
            page = number + 1
            title = one_line(getattr(item, "title", None) or "", MAX_TITLE_CHARS)
            if title and 1 <= page <= page_count:
                found.append((page, title))

    try:
        walk(reader.outline, 0)
    except MemoryError:
        raise
    except Exception:  # noqa: BLE001 - pypdf raises many types for broken outline trees
        pass
    return found


def key(text: str) -> str:
    """What two spellings of one heading share: no section number, case, punctuation or spacing (no
    space at all beside a character of a script without spaces between words)."""
    lowered = " ".join(text.casefold().split())
    return _UNSPACED_GAP.sub("", _NON_WORD.sub(" ", _NUMBER.sub("", lowered, count=1)).strip())


def matches(line: str, following: str, title: str) -> int:
    """How many lines of the page (0, 1 or 2) spell `title`: a wrapped title takes two lines."""
    want, have = key(title), key(line)
    if not want or not have:
        return 0
    if have == want:
        return 1
    if len(have) >= MIN_WRAP_CHARS and want.startswith(have) and following:
        return 2 if key(f"{line} {following}") == want else 0
    return 0
