"""The words and values a claim is made of, as the support check compares them with a passage.

Numbers are compared as written ("1,000" and "1000" alike), codes (part numbers, pins, model names)
as tokens, and content words with units split from their numbers ("36V" and "36 V" alike).
"""

from __future__ import annotations

import re
import unicodedata

from ingest.text.terms import content_terms

# A number glued to letters and more digits opens a part number ("1N4148", "2N3904"): no value;
# "600x400" is two.
_NUMBER_RE = re.compile(r"(?<![\w.])[-+]?\d+(?:[.,]\d+)*(?!(?!x\d)[a-z]+\d|[.,]?\d)")
# Tokens with letters and digits mixed, or short all-caps words: part numbers, pins, model names.
_CODE_RE = re.compile(r"\b(?=[A-Za-z0-9_\-/]*\d)(?=[A-Za-z0-9_\-/]*[A-Za-z])[A-Za-z0-9][A-Za-z0-9_\-/]*\b"
                      r"|\b[A-Z]{2,}[A-Z0-9]*\b")
# Acronyms so common in manuals' prose that a model may use them without quoting one passage.
_COMMON_CAPS = frozenset({"OK", "ON", "OFF", "AND", "OR", "NOT", "THE", "NOTE", "USB", "PC", "LED", "AC",
                          "DC", "ID", "PDF", "FAQ", "I", "A"})


def fold(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).lower()
    return (text.replace("\u00b7", "").replace("\u2022", " ").replace("\u2013", "-").replace("\u2014", "-")
            .replace("\u2212", "-"))


def numbers_of(text: str) -> set[str]:
    """Numbers as written, without thousands separators or trailing zeros ("1,000" -> "1000", "2.50" -> "2.5").

    A minus sign is kept: "up to 10 dBm" is not what "above −10 dBm" says (a hyphen after a digit,
    as in "6-42 V", is a range and no sign).
    """
    out = set()
    for raw in _NUMBER_RE.findall(fold(text)):
        sign = "-" if raw.startswith("-") else ""
        value = raw.lstrip("+-")
        if re.fullmatch(r"\d{1,3}(,\d{3})+", value):
            value = value.replace(",", "")
        value = value.replace(",", ".")
        if "." in value:
            value = value.rstrip("0").rstrip(".")
        value = value.lstrip("0") or "0"
        out.add(sign + value if value != "0" else value)
    return out


_SPELLED = {w: str(i) for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve".split())}
_SPELLED_RE = re.compile(r"\b(" + "|".join(_SPELLED) + r")\b")


def stated_numbers(passage: str) -> set[str]:
    """The numbers a passage states, in digits or spelled out ("after one year of normal use")."""
    return numbers_of(passage) | {_SPELLED[w] for w in _SPELLED_RE.findall(fold(passage))}


def codes_of(text: str) -> set[str]:
    return {m.lower() for m in _CODE_RE.findall(unicodedata.normalize("NFKC", text))
            if m.upper() not in _COMMON_CAPS and not m.isdigit()}


UNIT_GLUE_RE = re.compile(r"(?<=\d)(?=[^\W\d_])")


def overlap_terms(text: str) -> set[str]:
    """Content words for the overlap test: "36V" and "36 V", "piston-board" and "piston board" alike;
    numbers are left to the number test."""
    text = UNIT_GLUE_RE.sub(" ", unicodedata.normalize("NFKC", text))
    terms = content_terms(re.sub(r"[-_/]", " ", text))  # "Piston-board" holds "piston" and "board"
    return {t for t in terms if len(t) > 1 and not t.replace(".", "").isdigit()}


# "(page 9)", "section 4.1.1.2", "step 3": where the model read it, not a value it claims
_REFERENCE_RE = re.compile(r"\b(?:pages?|pp?\.|sections?|chapters?|figures?|fig\.|tables?|steps?)\s*\d+(?:[.\-–]\d+)*",
                           re.IGNORECASE)


def without_references(text: str) -> str:
    return _REFERENCE_RE.sub(" ", text)
