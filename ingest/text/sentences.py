"""Sentences of a passage: the unit the evidence quotes and the sentence ranking scores.

Shared by retrieval (retrieval.sentence_rank scores a passage by its best sentence) and the answer
(gateway.answer.citations, extractive: quoted and cited sentence by sentence), so that both cut a
passage the same way. Chinese and Japanese end a sentence with 。！？； (full width, no space after),
and a half-width ";" or "!" or "?" after one of their characters ends one too.
"""

from __future__ import annotations

import re

from ingest.text.scripts import HAN, HANGUL, KANA

# The marks a list item starts with, in every module that reads list items (the sentence cut here, the
# evidence's bullets, section titles, the support check): Chinese manuals use ■ and ◆ as often as •.
BULLETS = "•●◆▪◦‣■□➢►"

# A sentence ends at . ! ? (keeping citations that follow it: "Do X. [2] Then Y."), a blank line, or
# before a bulleted / numbered list item; not after "i.e.", "e.g.", "vs.", "Fig." or "approx.", nor after
# "Pin.", "No.", "Nr.", "Rev.", "Abb.", "Kap.", "Tab." or "S." before a number. A blank line ends one too,
# unless the next line starts in lower case: some PDFs' text layers put a blank line at every wrapped line
# ("... concerned, the\n\ntwo parts are ..."), and a sentence cut there is quoted as "As far as the
# Mechaduino is concerned, the."
# German manuals abbreviate as often: "ca. 30 mV", "evtl. Programmierkabel", "z. B. Temperatur", "bzw.", "ggf.",
# "(ab Rev. 1.4)", "siehe S. 12", "Abb. 3" (German nouns are capitalised, so the capital after the point
# says nothing); a lone small letter before a point ("z.", "d.", "u.") ends no sentence either.
_NEVER_ENDS = "".join(rf"(?<!\b{a})" for a in (
    "i\\.e", "e\\.g", "vs", "Fig", "approx", "[Cc]a", "[Ee]vtl", "[Gg]gf", "[Bb]zw", "[Vv]gl", "[Ii]nkl", "[Zz]zgl",
    "[Ss]og", "[Bb]spw", "[a-z]\\.[A-Z]", "[a-z]\\. [A-ZÄ]")) + r"(?<![\s(][a-zäöü])(?<!^[a-zäöü])"
_BEFORE_NUMBER = ("pin", "no", "nr", "rev", "abb", "kap", "tab", "s")  # "Pin. 2", "No. 5", "Rev. 1.4", "S. 12"
_SENTENCE_END_RE = re.compile(
    _NEVER_ENDS + r"[.!?]"
    + "".join(rf"(?!(?<=\b(?i:{a})\.)\s*\d)" for a in _BEFORE_NUMBER)
    +
    r"(?:\s*\[[\d,;\s\-–]+\])*[\"')\]]*\s+(?=[\"'(]?[A-Z0-9•\-ÄÖÜÀÂÇÉÈÊÎÔÛ])"
    r"|\n\s*\n(?!\s*[a-z])|\n(?=\s*(?:[•\-*]|\d+[.)])\s)"
    rf"|\n(?=\s*[{BULLETS}])"
    # a Chinese list item: "1、", "（2）", "③" (not "1）、", which answers the line before it in FAQs:
    # "8、下载代码之后，打印没有\n1）、这是因为我们需要 ... 重新上电")
    rf"|\n(?=[ \t]*(?:(?:\d{{1,2}}[、．]|（\d{{1,2}}）|[①-⑳])[ \t]*[{HAN}A-Za-z]|\(\d{{1,2}}\)[ \t]*[{HAN}]))"
    r"|:(?:\s*\[[\d,;\s\-–]+\])+[ \t]*\n"  # a cited line ending in a colon (a model's "The list is: [1]")
    rf"|[。！？；]+(?:\s*\[[\d,;\s\-–]+\])*[”」』）)]*\s*"  # CJK sentence ends: no space, no capital after
    rf"|(?<=[{HAN}{KANA}{HANGUL}])[;!?](?:\s*\[[\d,;\s\-–]+\])*\s*"
)


# A sentence that opens with a word pointing back ("则工具才具有 USB 相关功能" after "当拨拨码开关的第 7 位后，
# 重新上电。", "其中 BL702 不支持压缩烧写方式", "Ansonsten in Schreinerei berichtigen", "This means you should
# not connect ...") states half a fact: it is read and quoted with the sentence before it (continued_spans).
_CONTINUATION_RE = re.compile(r"^(?:则|其中|因此|所以|否则|此时|这时|即|也就是说|这样"
                              r"|(?:Ansonsten|Andernfalls|Sonst|Dabei|Dadurch|Daher|Deshalb|Somit|Hierbei|Hierzu|Dazu"
                              r"|Otherwise|Therefore|Thus|Hence|In this case|This means)\b)")


# A numbered Chinese title on its own line ("8.3 晶振类型默认设定", "第三章 接线说明") ends no sentence with a
# mark, so the body before it ran into it and it into the body after: "... name 字段长度不能超过 10 个字符\n8.3
# 晶振类型默认设定\nBLFlashCube 工具的晶振类型无法修改" was one sentence. The line is a sentence of its own (the
# evidence drops it as a title). Only a multi-level number or 第N章/节: "1、打开软件" is a step, not a title.
_CJK_TITLE_LINE_RE = re.compile(
    r"(?:^|(?<=\n)|(?<=[。！？；]))[ \t]*"
    rf"(?:\d{{1,2}}(?:\.\d{{1,2}}){{1,3}}\.?|第\s*[\d一二三四五六七八九十百零〇]+\s*[章节])"
    rf"[ \t]*[{HAN}][^\n。，；：！？,;:]{{0,30}}(?=\n|$)")


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """[start, end) of each sentence (or list item) in text, whitespace trimmed."""
    spans, start = [], 0
    for m in _SENTENCE_END_RE.finditer(text):
        spans.append((start, m.end()))
        start = m.end()
    spans.append((start, len(text)))
    titles = sorted({at for m in _CJK_TITLE_LINE_RE.finditer(text) for at in m.span()})
    if titles:  # each span cut where a title line starts or ends inside it
        cut = []
        for s, e in spans:
            edges = [s, *(t for t in titles if s < t < e), e]
            cut += list(zip(edges, edges[1:], strict=False))
        spans = cut
    out = []
    for s, e in spans:
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if e > s:
            out.append((s, e))
    return out


def continued_spans(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sentence spans with each one that continues the sentence before it (_CONTINUATION_RE) joined to it."""
    out: list[tuple[int, int]] = []
    for s, e in spans:
        if out and _CONTINUATION_RE.match(text[s:e]):
            out[-1] = (out[-1][0], e)
        else:
            out.append((s, e))
    return out
