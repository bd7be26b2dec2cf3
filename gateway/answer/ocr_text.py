"""Passages read by OCR (ingest.ocr) in the support check and the extractive answer.

Tesseract reads "85 N·m" as "65 N·m" now and then, and says it was unsure: each OCR passage carries
the [start, end) of its words read with a confidence under ingest.ocr_min_confidence
(Hit.ocr_doubtful). A number or code in such a word backs no claim: the support check reads the
passage with those digits masked, and the extractive answer does not quote a sentence that holds one
(the passage is still shown, marked "OCR, check the page").
"""

from __future__ import annotations

from retrieval.types import Hit

MASK = "#"


def support_text(hit: Hit) -> str:
    """The passage as the support check reads it: digits of doubtful OCR words masked ("85" -> "##")."""
    if not hit.ocr_doubtful:
        return hit.text
    chars = list(hit.text)
    for start, end in hit.ocr_doubtful:
        for i in range(max(0, int(start)), min(len(chars), int(end))):
            if chars[i].isdigit():
                chars[i] = MASK
    return "".join(chars)


def doubtful_number(hit: Hit, start: int, end: int) -> bool:
    """Whether hit.text[start:end] holds a digit read in a doubtful OCR word."""
    for a, b in hit.ocr_doubtful or ():
        lo, hi = max(int(a), start), min(int(b), end)
        if lo < hi and any(ch.isdigit() for ch in hit.text[lo:hi]):
            return True
    return False
