"""Pages whose text layer glued its words together, read again by poppler's `pdftotext`.

Some PDFs set justified text by placing each word rather than by writing a space between words. pypdf
then reads such a line as one word ("AmbestenstelltmaninderOszilloskop-KonfigurationeineSamplingzeit"
in eval/de-dev's picoCosmo Anleitung, 13 of its 17 pages): no word of it can be found by the lexical
search, the embedder reads noise, and the evidence quotes it as it is. Poppler's `pdftotext` (installed
with `pdftoppm` for OCR) places words by their positions and reads the same pages with their spaces.

A page is read again when GLUED_SHARE of its letters or more are in words of GLUED_LETTERS letters or
more (letters of scripts written without spaces, such as Chinese, left out): on the 30 manuals of the
training corpus, the sample manuals and the development halves no page of ordinary text reaches 0.03
(German compounds included: "Traktionsbatteriezellblocktemperatur" is one word on a page of a table,
0.18, which poppler reads the same and is kept), and the glued pages are at 0.26-0.47. The new reading
replaces the old only when it holds the same letters (SAME_LETTERS, as a multiset: the order of columns
may differ) and at most half the glued share; otherwise, or without pdftotext, the page stays as pypdf
read it.

A page with fewer glued words (any run of GLUED_LETTERS letters or more, under GLUED_SHARE) keeps pypdf's
reading, and only those runs are spelt as poppler's reading spaces them (`respace_runs`): eval/de-dev3's
wordclock Anleitung glues a line here and there ("imgleichenNetzwerkbefinden" in a table whose rows
pypdf keeps together and poppler reads column by column). A long compound poppler reads as one word
stays one word.
"""

from __future__ import annotations

import logging
import re
import shutil
import subprocess
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from ingest.text.scripts import CJK

log = logging.getLogger(__name__)

GLUED_LETTERS = 25  # a run of letters this long is rarely one word, even in German
GLUED_SHARE = 0.08  # a page with this share of its letters in such runs is read again
SAME_LETTERS = 0.98  # the new reading holds the same letters (Dice over the multiset of non-space characters)
MIN_LETTERS = 200  # pages with fewer letters are left as they are: too little to judge
TIMEOUT_S = 30.0  # one page's pdftotext
BUDGET_S = 120.0  # all of a manual's: past it the remaining glued pages stay as pypdf read them (a hostile PDF
# of thousands of pages, each made to stall poppler, must not hold the parse for hours)
# Runs of letters of the scripts written with spaces between words: Chinese, Japanese, Korean, Thai, Lao,
# Myanmar and Khmer run on without spaces by nature (a Chinese page of the dev halves reaches 0.076 if
# they count), so they break a run and count for nothing.
_UNSPACED = CJK + "\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff"
_LETTERS_RE = re.compile(f"[^\\W\\d_{_UNSPACED}]+")


def glued_share(text: str) -> float:
    """The share of the text's letters in runs of GLUED_LETTERS letters or more (0.0 without letters)."""
    runs = [len(run) for run in _LETTERS_RE.findall(text)]
    letters = sum(runs)
    return sum(n for n in runs if n >= GLUED_LETTERS) / letters if letters >= MIN_LETTERS else 0.0


def same_letters(a: str, b: str) -> float:
    """How alike two readings' non-space characters are as multisets (Dice coefficient, 1.0 = the same)."""
    ca, cb = Counter("".join(a.split())), Counter("".join(b.split()))
    total = sum(ca.values()) + sum(cb.values())
    return 2 * sum((ca & cb).values()) / total if total else 1.0


def _pdftotext(path: Path, page: int) -> str | None:
    """Poppler's reading of one page, None when pdftotext is missing or fails."""
    exe = shutil.which("pdftotext")
    if exe is None:
        return None
    try:
        done = subprocess.run([exe, "-q", "-f", str(page), "-l", str(page), "-enc", "UTF-8", str(path), "-"],
                              capture_output=True, timeout=TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.decode("utf-8", "replace") if done.returncode == 0 else None


def respace_pages(path: Path, pages: list[tuple[int, str]], normalise: Callable[[str], str],
                  read: Callable[[Path, int], str | None] = _pdftotext,
                  budget_s: float = BUDGET_S) -> tuple[list[tuple[int, str]], list[int]]:
    """The pages with each glued one replaced by pdftotext's reading where that is better (module doc),
    and the numbers of the pages replaced. normalise: what the text layer's text went through
    (ingest.pdf.normalise_text), so both readings are compared and kept alike. budget_s: the time all
    the readings may take together."""
    out: list[tuple[int, str]] = []
    replaced: list[int] = []
    deadline = time.monotonic() + budget_s
    for number, text in pages:
        share = glued_share(text)
        raw = read(path, number) if share > 0.0 and time.monotonic() < deadline else None
        again = normalise(raw) if raw else ""
        if again:
            whole = (share >= GLUED_SHARE and same_letters(text, again) >= SAME_LETTERS
                     and glued_share(again) <= share / 2)
            text, changed = (again, True) if whole else respace_runs(text, again)
            if changed:
                replaced.append(number)
        out.append((number, text))
    if replaced:
        log.info("%s: pages %s read again by pdftotext (words glued in the text layer)", path.name, replaced)
    return out, replaced


MAX_RUN_LETTERS = 400  # longer runs are not looked up (the pattern, and its search, grow with them)


def respace_runs(text: str, again: str) -> tuple[str, bool]:
    """The text with each run of GLUED_LETTERS letters or more spelt as `again` (the page read again) spaces
    it, and whether any changed; a run not found there, letter for letter, stays as it is."""
    changed = False

    def spaced(m: re.Match[str]) -> str:
        nonlocal changed
        run = m.group(0)
        if not GLUED_LETTERS <= len(run) <= MAX_RUN_LETTERS:
            return run
        found = re.search(r"\s*".join(re.escape(ch) for ch in run), again)
        if found is None:
            return run
        words = " ".join(found.group(0).split())
        changed = changed or words != run
        return words

    return _LETTERS_RE.sub(spaced, text), changed


MAX_TITLE_CHARS = 200  # longer "titles" are not looked up in the page (the pattern grows with them)


def spaced_as_read(title: str, page_text: str) -> str:
    """The title as a page read again spells it: the cover's largest text comes from pypdf's runs, glued as
    the page was ("Tutorialzu picoCosmo" on eval/de-dev's picoCosmo cover), while pdftotext's reading of the
    page has its spaces ("Tutorial zu picoCosmo"). The title's characters found in that order, with any
    spaces between them, in the page's text; the title unchanged where they are not found."""
    letters = [ch for ch in title if not ch.isspace()]
    if len(letters) < 4 or len(title) > MAX_TITLE_CHARS:
        return title
    found = re.search(r"\s*".join(re.escape(ch) for ch in letters), page_text)
    return " ".join(found.group(0).split()) if found else title
