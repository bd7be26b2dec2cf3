"""Which writing system a character belongs to, for the analysers that cut text without spaces.

Chinese and Japanese are written without spaces between words, so a run of their characters is one
"word" to a whitespace tokenizer (and to SQLite's unicode61); Korean uses spaces, but its words carry
particles, so it is cut into character pairs too (retrieval's CJK fallback, DESIGN.md "Languages").
"""

from __future__ import annotations

import re

# Han ideographs (with extension A and the compatibility block), kana (with the half-width forms)
# and Hangul syllables/jamo. Extension B and beyond (U+20000..) are rare in manuals but cheap to keep.
HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f"
KANA = "\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f"
HANGUL = "\uac00-\ud7af\u1100-\u11ff\u3130-\u318f"
CJK = HAN + KANA + HANGUL

CJK_RUN = re.compile(f"[{CJK}]+")
_HAN_RE = re.compile(f"[{HAN}]")
_KANA_RE = re.compile(f"[{KANA}]")
_HANGUL_RE = re.compile(f"[{HANGUL}]")
# A PDF's text layer breaks Chinese and Japanese lines anywhere, also inside a word: the break (and
# any spaces around it) between two such characters is not a word boundary. Korean keeps its spaces.
_BROKEN_LINE = re.compile(f"(?<=[{HAN}{KANA}])\\s+(?=[{HAN}{KANA}])")
# Han, kana and the ideographic punctuation and full-width forms set between them ("，", "。", "“")
_UNSPACED = re.compile(f"[{HAN}{KANA}\u3000-\u303f\uff00-\uffef]")


def is_cjk(ch: str) -> bool:
    return bool(CJK_RUN.match(ch))


def script_counts(text: str) -> dict[str, int]:
    """Characters of each script that decides a language: han, kana, hangul, latin, cyrillic."""
    return {
        "han": len(_HAN_RE.findall(text)),
        "kana": len(_KANA_RE.findall(text)),
        "hangul": len(_HANGUL_RE.findall(text)),
        "latin": sum(1 for ch in text if ch.isalpha() and ch < "\u0250"),
        "cyrillic": sum(1 for ch in text if "\u0400" <= ch <= "\u04ff"),
    }


def join_cjk_lines(text: str) -> str:
    """Whitespace between two Chinese or Japanese characters removed (a wrapped line, not a space)."""
    return _BROKEN_LINE.sub("", text)


def joins_unspaced(before: str, after: str) -> bool:
    """Whether two words read on one line (OCR gives each Chinese word apart) are written without a space
    between them: either side is Chinese or Japanese script or its punctuation. Korean keeps its spaces."""
    return bool(before and after and (_UNSPACED.match(before[-1]) or _UNSPACED.match(after[0])))
