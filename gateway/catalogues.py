"""The string catalogues, one per language (ui/templates/strings.<lang>.json): the pages' words, and the
answer's own words (not found, evidence only) in the question's language (gateway.answer.answer_texts).

Read here, below the web layer, so that the answer core and the pages share one catalogue per language
(issue 47 item 4) without the answer core importing the web app. A catalogue is re-read when its file
changes (an edit shows without a restart).
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

LANGUAGES = ("en", "de", "zh")
DEFAULT = "en"
TEMPLATES_DIR = Path(__file__).resolve().parent.parent / "ui" / "templates"


def catalogue_path(lang: str) -> Path:
    return TEMPLATES_DIR / f"strings.{lang}.json"


class Catalogues:
    """The catalogues read, per language, with their file's mtime: re-read when the file changes. One per
    app (its state's `catalogues`); the answer core uses the process's own (SHARED)."""

    def __init__(self) -> None:
        self._read: dict[str, tuple[float, dict[str, str]]] = {}
        self._lock = threading.Lock()

    def get(self, lang: str) -> dict[str, str]:
        path = catalogue_path(lang)
        mtime = path.stat().st_mtime
        with self._lock:
            hit = self._read.get(lang)
            if hit is None or hit[0] != mtime:
                strings = json.loads(path.read_text(encoding="utf-8"))
                if not isinstance(strings, dict) or not all(isinstance(v, str) for v in strings.values()):
                    raise ValueError(f"{path}: a catalogue is one JSON object of strings")
                hit = (mtime, strings)
                self._read[lang] = hit
            return hit[1]


SHARED = Catalogues()


def catalogue(lang: str, catalogues: Catalogues | None = None) -> dict[str, str]:
    """The language's strings: through `catalogues` (an app's), else the process's own."""
    return (catalogues or SHARED).get(lang)
