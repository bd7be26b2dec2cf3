"""How many sentences of the development halves' manuals the bare-link rule refuses, and which (issue 48 item 3).

gateway.answer.extractive.is_bare_link keeps a web address with fewer than 4 other words out of the evidence
("how to calibrate the actuator" began with the product's URL). Read on eval/dev, dev2 and dev3's manuals
(pypdf text, the evidence's sentence cuts) on 2026-12-06: 4 of 5,355 sentences of 4+ words were refused,
all non-answers (a cover's "www.olimex.com", two link lines of a community page, a footer glued to a
fragment). Prints the count and the refused sentences; writes nothing.

    .venv/bin/python -m bench.experiments.bare_links
"""

from __future__ import annotations

import argparse
from pathlib import Path

from gateway.answer.extractive import _clean, is_bare_link
from ingest.text.sentences import sentence_spans
from ingest.text.terms import word_count

HALVES = ("dev", "dev2", "dev3")


def refused_sentences(halves: tuple[str, ...] = HALVES) -> tuple[int, list[str]]:
    from pypdf import PdfReader

    total, refused = 0, []
    for half in halves:
        for pdf in sorted((Path("eval") / half / "manuals").glob("*.pdf")):
            for number, page in enumerate(PdfReader(str(pdf)).pages, start=1):
                text = page.extract_text() or ""
                for s, e in sentence_spans(text):
                    sentence = _clean(text[s:e])
                    if word_count(sentence) < 4:
                        continue
                    total += 1
                    if is_bare_link(sentence):
                        refused.append(f"{half}/{pdf.name} p{number}: {sentence[:140]}")
    return total, refused


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--halves", nargs="+", default=list(HALVES))
    args = parser.parse_args()
    total, refused = refused_sentences(tuple(args.halves))
    print(f"sentences of >= 4 words: {total}; refused as bare links: {len(refused)}")
    print("\n".join(refused))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
