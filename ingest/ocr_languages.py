"""Which Tesseract languages read a manual's page images when ingest.ocr_languages is "auto" (the default).

A scanned page is in its manual's language: the screenshots of a Chinese manual read with English
data only come out as noise ("Eig Th AN AR Ae APRS"), and Tesseract has no reliable way to pick a
language by itself. "auto" takes the languages the manual's text layer is written in (each one found
on at least SHARE of its pages with text, MAX_FROM_TEXT at most) plus English, which part numbers,
units and on-screen labels are in almost everywhere. A manual with no text layer at all is named by
one probe page, read with every installed language this module knows. A language whose data is not
installed is read as English, and the ingest report says which package would read it.
"""

from __future__ import annotations

import shutil
import subprocess
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from ingest.text.languages import NAMES, detect

AUTO = "auto"
# ISO 639-1 (ingest.text.languages) -> Tesseract's traineddata name (Debian: tesseract-ocr-<name>)
TESSERACT = {"en": "eng", "de": "deu", "fr": "fra", "es": "spa", "it": "ita", "nl": "nld", "pt": "por",
             "ru": "rus", "zh": "chi_sim", "ja": "jpn", "ko": "kor"}
SHARE = 0.2  # a language on fewer of the text pages is a quotation, not the manual's
MAX_FROM_TEXT = 2  # each extra language makes Tesseract slower and adds ways to misread a word
MIN_TEXT_PAGES = 1  # pages whose language the text layer names, needed to skip the probe
_DETECT_CHARS = 2000


def package(name: str) -> str:
    """The Debian package holding Tesseract's data for `name` ("chi_sim" -> tesseract-ocr-chi-sim)."""
    return "tesseract-ocr-" + name.lower().replace("_", "-")


def installed(tesseract: str) -> set[str]:
    """The languages Tesseract has data for (`--list-langs`); empty when it cannot say."""
    try:
        out = subprocess.run([tesseract, "--list-langs"], capture_output=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return set()
    return set(out.stdout.decode("utf-8", "replace").split()[1:]) if out.returncode == 0 else set()


def text_languages(texts: dict[int, str], skip: set[int]) -> list[str]:
    """ISO codes of the languages the pages' text layer is written in, most pages first ([] when no
    page outside `skip` says)."""
    manual = detect(" ".join(t[:_DETECT_CHARS] for p, t in sorted(texts.items()) if p not in skip))
    counts: Counter[str] = Counter()
    for page, text in texts.items():
        if page not in skip:
            found = detect(text[:_DETECT_CHARS], manual)
            if found:
                counts[found] += 1
    total = sum(counts.values())
    if total < MIN_TEXT_PAGES:
        return []
    return [lang for lang, n in counts.most_common() if n >= SHARE * total][:MAX_FROM_TEXT]


def probe_set(have: set[str]) -> list[str]:
    """What reads the probe page of a manual without a text layer: each installed language this module
    knows, English first (Tesseract prefers the first where two read a word equally well)."""
    known = [name for name in TESSERACT.values() if name in have]
    return known or ["eng"]


def choose(codes: list[str], have: set[str]) -> tuple[list[str], list[str]]:
    """(the Tesseract languages to read with, those that would read the manual's languages but are not
    installed). English is always among the first: it reads part numbers, units and UI labels."""
    wanted = [TESSERACT[code] for code in codes if code in TESSERACT]
    chosen = [name for name in dict.fromkeys([*wanted, "eng"]) if not have or name in have]
    missing = [name for name in dict.fromkeys(wanted) if have and name not in have]
    return chosen or ["eng"], missing


def missing_note(missing: list[str], pages: int) -> str:
    """The ingest report's line for languages read as English for want of their data."""
    names = ", ".join(next((NAMES[c] for c, t in TESSERACT.items() if t == m), m) for m in missing)
    return (f"read {pages} page{'s' if pages != 1 else ''} by OCR without {names} data (text in it is read "
            f"as English, often noise): install {' '.join(package(m) for m in missing)}, then ingest again")


def languages_arrived(manuals: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """sha256 -> the packages now installed for a manual (an index manifest's record) whose pages were read
    without its languages' data: ingest parses it again instead of keeping it (retrieval.builder)."""
    waiting = {str(m["sha256"]): [str(x) for x in (m.get("ocr") or {}).get("missing") or []] for m in manuals}
    waiting = {sha: missing for sha, missing in waiting.items() if missing}
    tesseract = shutil.which("tesseract") if waiting else None
    have = installed(tesseract) if tesseract else set()
    return {sha: " ".join(package(m) for m in missing if m in have) for sha, missing in waiting.items()
            if any(m in have for m in missing)}
