"""A manual's title, chosen from what the parse worker read off the PDF: the metadata title unless
it names no equipment or the front pages no longer carry it, else page 1's largest text or its first
title-like line, else the file name as words.

Text in, text out (no PDF here): ingest.pdf.extract hands over the metadata title and the first
pages' text, and tests and bench/experiments/stale_titles.py call these functions directly.
"""

from __future__ import annotations

import re
import unicodedata

# Runs of spaces, which ingest.pdf.normalise_text makes one space too.
_SPACE_RUN = re.compile(r"[ \u2000-\u200a\u205f\u3000]+")
_BAD_TITLE = re.compile(
    r"^(untitled.*|title|document\d*|slide \d+|administrator|admin|owner|author|unknown"  # account names too
    r"|powerpoint presentation|microsoft (word|powerpoint) - .*"
    r"|.*\.(docx?|odt|rtf|txt|pdf|indd|qxd|pptx?|xlsx?|tex|dvi|ps|ai|eps))$",
    re.IGNORECASE,
)
# Titles that name the kind of document, not the equipment: every manual could carry them, so a
# manual list of them says nothing. Optional words around a document kind ("Owner's Manual",
# "User Guide", "Installation Instructions", "Manual v2", "Datasheet").
_DOC_KIND = (r"(manual|guide|handbook|booklet|instructions?|datasheet|data sheet|document(ation)?|brochure"
             r"|leaflet|specifications?|spec sheet|reference|notes|book|pdf|file|report|draft|title page)")
_GENERIC_WORDS = (r"(the|a|an|users?['’]?s?|owners?['’]?s?|operators?['’]?s?|operating|operation|operations"
                  r"|instruction|installation|install|service|maintenance|repair|technical|product|quick"
                  r"|start|setup|set-up|getting|started|safety|reference|programming|assembly|english|en"
                  r"|complete|full|general|new|and|&|of|for|-)")
_GENERIC_TITLE = re.compile(
    rf"^({_GENERIC_WORDS}\s+)*{_DOC_KIND}(\s+{_GENERIC_WORDS})*(\s+(v|rev\.?|version)?\s*[\d.]+[a-z]?)?$",
    re.IGNORECASE,
)
# The same in Chinese and German: "产品介绍" (product introduction), "用户手册", "使用说明书",
# "Bedienungsanleitung", "Benutzerhandbuch", "Aufbauanleitung" name no equipment either.
_GENERIC_FOREIGN = re.compile(
    r"^(?:(?:产品|用户|使用|操作|安装|快速|硬件|软件|技术|开发|用戶|產品)?(?:介绍|介紹|简介|簡介|手册|手冊|说明书?|說明書?"
    r"|指南|入门|文档|资料)|(?:bedienungs|benutzer|betriebs|gebrauchs|aufbau|montage|installations|kurz"
    r"|schnellstart)?(?:anleitung|handbuch|dokumentation|beschreibung))(?:\s*(?:v|version)?\s*[\d.]+)?$",
    re.IGNORECASE)
# A numbered section ("一、Answer", "1、供电方式", "第一章 概述") set large on page 1 opens the text, it names
# no manual.
_SECTION_NUMBERED = re.compile(
    r"^(?:[一二三四五六七八九十]+\s*[、.．]|\d{1,2}\s*[、)）]|第\s*[\d一二三四五六七八九十]+\s*[章节])")
# A file name or a file-system-like code rather than words: no spaces, parts joined by "_" or "-"
# ("pump_manual_v3", "XR200-SM-EN-rev4"), a document number ("DOC-00123"), or a path.
# Section words that open a title page's text but name nothing ("Contents", "Table of contents").
_SECTION_WORD = re.compile(r"^(?:(?:table of )?contents|index|preface|foreword|introduction|overview)$", re.IGNORECASE)
_FILE_LIKE = re.compile(r"^(\S*[_/\\]\S*|[\w.]+(-[\w.]+){2,}|[A-Za-z]{0,4}-?\d{5,}[\w-]*)$")


def meaningful_title(candidate: str | None) -> str:
    """The candidate tidied, or "" when it says nothing (empty, 'Untitled', a file name...)."""
    if not candidate:
        return ""
    title = _SPACE_RUN.sub(" ", str(candidate).replace("\n", " ").replace("\x00", "")).strip(" -_:;,")
    if sum(ch.isalpha() for ch in title) < 3 or len(title) > 200 or _BAD_TITLE.match(title):
        return ""
    return title


def is_generic_title(title: str, stem: str = "") -> bool:
    """A title that names no equipment: only a kind of document ("User Manual", "Operating
    Instructions"), a file name or code ("pump_manual_v3"), or the file's own name."""
    title = title.strip()
    key = re.sub(r"[\s_\-.]+", " ", title).strip().lower()
    # the file's own name as a title says no more than the file name, unless it is written as words
    same_as_file = bool(stem) and key == re.sub(r"[\s_\-.]+", " ", stem).strip().lower() and " " not in title
    return (not title or bool(_GENERIC_TITLE.match(title)) or bool(_GENERIC_FOREIGN.match(title))
            or bool(_FILE_LIKE.match(title)) or same_as_file)


def readable_stem(stem: str) -> str:
    """A file name as words: "pump_service-manual" -> "pump service manual" (the extension is gone)."""
    words = stem.replace("_", " ")
    if " " not in words.strip():
        words = words.replace("-", " ")
    return _SPACE_RUN.sub(" ", words).strip() or stem


# A date or a revision stamp is never a manual's title ("October 31, 2025", "Rev. 2 - 2024-03-01"),
# though a title page often sets it large.
_DATE_LINE = re.compile(
    r"^\W*(?:(?:rev(?:ision)?|version|v|date|updated|edition)\W*[\w.]*\W*)?"
    r"(?:\d{1,4}[./-]\d{1,2}[./-]\d{1,4}|(?:\d{1,2}\W+)?(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
    r"(?:\W+\d{1,2}(?:st|nd|rd|th)?)?,?\W+\d{4})\W*$", re.IGNORECASE)


def _letter_spaced(text: str) -> bool:
    """Single characters set apart by spaces ("M E S P I W O R D F", a word clock's letter grid on eval/de-dev3's
    cover; "U S E R  M A N U A L"): read so, no words a title could be cited by."""
    tokens = text.split()
    return len(tokens) >= LETTER_SPACED_MIN and sum(len(t) == 1 for t in tokens) >= LETTER_SPACED_SHARE * len(tokens)


LETTER_SPACED_MIN = 4
LETTER_SPACED_SHARE = 0.8


def _looks_like_title_line(line: str) -> bool:
    letters = sum(ch.isalpha() for ch in line)
    return (letters >= 3 and len(line) <= 100 and not line.endswith((".", ",", ";")) and not _letter_spaced(line)
            and not any(mark in line for mark in "。，；")  # a Chinese sentence or a piece of one
            and "@" not in line and "://" not in line and "...." not in line and not _DATE_LINE.match(line)
            and not _SECTION_NUMBERED.match(line))


def page_title(big_text: str, page1_text: str, stem: str) -> str:
    """A title read off page 1: its largest text, else its first title-like line that names more
    than a kind of document; else the file name as words."""
    if big_text and len(big_text) <= 150:
        title = meaningful_title(big_text)
        if title and _looks_like_title_line(title) and not is_generic_title(title, stem):
            return title
    lines = [line.strip() for line in page1_text.split("\n")[:15]]
    for number, line in enumerate(lines):
        # a printed line that reads like the file's name confirms it (no stem test here)
        if _looks_like_title_line(line) and meaningful_title(line) and not is_generic_title(line) \
                and not _SECTION_WORD.match(line):
            # "XR-200" then "Service Manual" on the next line: one title
            following = lines[number + 1] if number + 1 < len(lines) else ""
            if following and _looks_like_title_line(following) and _GENERIC_TITLE.match(following) \
                    and len(line) + len(following) < 100:
                return f"{line} {following}"
            return line
    return readable_stem(stem)


_VERSION = re.compile(r"(?<![^\W\d_])(?:v|ver\.?|version|rev\.?|revision)\s*(\d+(?:\.\d+)*)", re.IGNORECASE)
_NOT_A_TITLE = {"contents", "table of contents", "index", "introduction", "preface", "foreword", "inhalt",
                "inhaltsverzeichnis", "目录", "目錄", "前言"}
# A metadata title with less than this share of its naming words on the front pages is stale, unless the
# front pages carry under MIN_FRONT_CHARS characters of text (a cover with a word or two, a figure, a
# logo, says nothing either way). docs/bench/experiments/stale_titles.md measured it.
STALE_SHARE = 0.5
MIN_FRONT_CHARS = 60
_KIND_WORD = re.compile(rf"(?:{_DOC_KIND}|{_GENERIC_WORDS})$", re.IGNORECASE)
_NOT_ALNUM = re.compile(r"[\W_]+")


def _squashed(text: str) -> str:
    """Lower-cased letters and digits only: "XR-200" and "XR 200" read alike, and so do a word and the
    word run into its neighbours on a cover ("P-200Service")."""
    return _NOT_ALNUM.sub("", unicodedata.normalize("NFKC", text).lower())


def naming_words(title: str) -> set[str]:
    """The title's content words (ingest.text.terms.content_terms) less the words every manual's title
    could carry ("User", "Manual", "Assembly", "使用说明书"): what names the equipment or the subject.
    All of its content words when nothing else is left."""
    from ingest.text.terms import content_terms

    words = content_terms(title)
    names = {w for w in words if not _KIND_WORD.match(w) and not _GENERIC_FOREIGN.match(w)}
    return names or words


def is_stale_title(title: str, front_text: str) -> bool:
    """A metadata title the document no longer carries: a version the front pages replace with another
    ("... V1.0" on a V3.0 document), or one whose naming words (naming_words) are mostly absent from
    the front pages (a recruitment notice's title left on an updater tool's guide, a sister product's
    name left on a counter's manual). A word counts as present anywhere in the front text, across
    spaces, hyphens and neighbouring words (so a name spelt "XR 200" carries "XR-200"). Without enough
    front text (under MIN_FRONT_CHARS: a cover set as an image) only the version test speaks."""
    said = {m.group(1) for m in _VERSION.finditer(title)}
    shown = {m.group(1) for m in _VERSION.finditer(front_text)}
    if said and shown and not said & shown:
        return True
    if len(front_text.strip()) < MIN_FRONT_CHARS:
        return False
    names = naming_words(title)
    front = _squashed(front_text)
    carried = sum(_squashed(w) in front for w in names)
    return bool(names) and carried < STALE_SHARE * len(names)


def choose_title(meta_title: str | None, big_text: str, page1_text: str, stem: str, front_text: str = "") -> str:
    """Metadata title if it names the equipment and the front pages (`front_text`, pages 1-2) still
    carry it, else a title from page 1 (page_title), else the file name as words: a generic or stale
    metadata title ("User Manual", "... V1.0" on a V3.0 document) is never chosen."""
    title = meaningful_title(meta_title)
    if title and not is_generic_title(title, stem):
        if not is_stale_title(title, front_text):
            return title
        found = page_title(big_text, page1_text, stem)
        # only a real title read off the cover replaces it, not the file name or a "Contents" page
        return found if found != readable_stem(stem) and found.lower() not in _NOT_A_TITLE else title
    return page_title(big_text, page1_text, stem)


# A page whose largest text is most of its text sets nothing apart as a title (one font size throughout:
# a plain-text export, a generated PDF): its "largest text" was the whole page, running header and page
# footer included ("BLDC-300 ... 使用说明书 版本 V3.0 共 5 页 第 1 页"). Then page 1's first title-like
# line names the manual (page_title). Of the 63 development, training, sample and test manuals this
# changed one title: "蜂鸟 E203 快速上手 说明" -> "蜂鸟 E203 快速上手说明".
UNIFORM_SHARE = 0.8
UNIFORM_MIN_RUNS = 4


def _largest_text(runs: list[tuple[float, str]]) -> str:
    """Text set in the largest font on a page (usually the title on a cover page); "" where that is most
    of the page's text (UNIFORM_SHARE): nothing is set apart."""
    runs = [(size, text) for size, text in runs if text.strip()]
    if not runs:
        return ""
    top = max(size for size, _ in runs)
    big = [text for size, text in runs if size >= 0.9 * top]
    if len(runs) >= UNIFORM_MIN_RUNS and (sum(len(t.strip()) for t in big)
                                          >= UNIFORM_SHARE * sum(len(t.strip()) for _s, t in runs)):
        return ""
    return " ".join(" ".join(text.split()) for text in big).strip()
