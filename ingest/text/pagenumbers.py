"""Lines that only number the page, in the languages manuals come in.

"Page 3 of 24", "- 7 -", "3/24", "第 7 页", "共 24 页 第 7 页", "Seite 4 von 12", "S. 4", "Página 2",
"p. 12": printed on every page, repeated by the text layer, they are never evidence and never a
heading. The chunker drops them among a page's first two and last three lines, even where they do not repeat
enough to count as a running footer (a short manual); in the middle of a page "12" is a table's value.
"""

from __future__ import annotations

import re

_WORDS = r"(?:page|pages|p|pg|seite|s|blatt|página|pagina|pag|pág|side|sida|strona|стр|страница)"
_NUMBER = r"(?:\d{1,4}|[ivxlcdm]{1,6})"
_PATTERNS = [
    rf"{_WORDS}\.?\s*{_NUMBER}(?:\s*(?:of|von|de|di|/|sur|из|от)\s*\d{{1,4}})?",  # Page 3 of 24, Seite 4 von 12
    rf"{_NUMBER}\s*(?:/|of|von)\s*\d{{1,4}}",  # 3/24, 3 of 24
    r"[-–—]?\s*\d{1,4}\s*[-–—]?",  # 7, - 7 -
    r"(?:共\s*\d{1,4}\s*页\s*)?第\s*\d{1,4}\s*页(?:\s*[,，/／]?\s*共\s*\d{1,4}\s*页)?",  # 第 7 页, 共 24 页 第 7 页
    r"\d{1,4}\s*[/／]\s*\d{1,4}\s*页",
    r"[-–—]\s*\d{1,4}\s*[-–—]\s*(?:ページ|页|頁)?",
    r"\d{1,4}\s*(?:ページ|頁)",
]
_PAGE_LINE = re.compile(r"^\s*(?:" + "|".join(_PATTERNS) + r")\s*$", re.IGNORECASE)


def is_page_number_line(line: str) -> bool:
    """True for a line that says only which page this is."""
    return len(line) <= 40 and bool(_PAGE_LINE.match(line))
