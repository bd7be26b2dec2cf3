"""Heading detection scored against the manuals' own outlines (bookmarks).

A manual with an outline says which lines are its headings. For those manuals, the line-shape
heuristics (ingest.headings, run with the outline withheld) are scored against it:
- precision: detected heading lines that spell an outline title of that page (or the next or the
  one before: a bookmark may point at the page a section starts on, or the one where its title
  sits) / detected heading lines; outlines leave out minor headings, so this is a lower bound;
- recall: outline titles found as a line of their page's text that the heuristics also took /
  outline titles found as a line of their page's text.
With the outline given, every found title is a heading by construction; the bench prints how many
titles were found in the text at all ("found"). eval/dev chooses rule changes; eval/test reports.

    python -m bench.experiments.headings eval/dev/manuals [more folders] [--show]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ingest.chunker import _running_lines
from ingest.headings import Headings
from ingest.models import PageText, ParsedManual
from ingest.outline import matches
from ingest.pdf import extract


def parsed_manual(path: Path) -> ParsedManual:
    data = extract(path, 5000)
    return ParsedManual("0" * 64, path.name, data["title"], data["page_count"], path.stat().st_size,
                        [PageText(*row) for row in data["pages"]], data["pages_without_text"],
                        [tuple(x) for x in data["outline"]])


def score(parsed: ParsedManual) -> dict[str, object]:
    furniture = _running_lines(parsed)
    heuristics = Headings.for_manual([])
    titles: dict[int, list[str]] = {}
    for page, title in parsed.outline:
        titles.setdefault(page, []).append(title)
    detected: list[tuple[int, str, bool]] = []
    found: set[tuple[int, str]] = set()
    hit: set[tuple[int, str]] = set()
    for page in parsed.pages:
        lines = [ln.strip() for ln in page.text.split("\n") if ln.strip()]
        near = [(p, t) for p in (page.number - 1, page.number, page.number + 1) for t in titles.get(p, [])]
        spelled = {i: (p, t) for i in range(len(lines)) for p, t in near
                   if matches(lines[i], lines[i + 1] if i + 1 < len(lines) else "", t)}
        found |= {v for v in spelled.values() if v[0] == page.number}
        i = 0
        while i < len(lines):
            got = heuristics.at(page.number, lines, i, furniture)
            if got:
                right = i in spelled
                detected.append((page.number, got[0], right))
                if right:
                    hit.add(spelled[i])
            i += got[1] if got else 1
    return {"detected": detected, "right": sum(r for *_x, r in detected), "found": len(found),
            "hit": len(found & hit), "outline": len(parsed.outline)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="+", type=Path)
    ap.add_argument("--show", action="store_true", help="list every detected heading")
    args = ap.parse_args()
    total = {"detected": 0, "right": 0, "found": 0, "hit": 0}
    print("| manual | outline entries | titles found in text | heuristic headings | precision | recall |")
    print("|---|---|---|---|---|---|")
    for folder in args.folders:
        for path in sorted(folder.glob("*.pdf")):
            parsed = parsed_manual(path)
            if len(parsed.outline) < 3:
                continue
            s = score(parsed)
            n = len(s["detected"])  # type: ignore[arg-type]
            total["detected"] += n
            for k in ("right", "found", "hit"):
                total[k] += s[k]  # type: ignore[operator]
            print(f"| {path.name} | {s['outline']} | {s['found']} | {n} | {s['right'] / max(n, 1):.2f} | "
                  f"{s['hit'] / max(s['found'], 1):.2f} |")  # type: ignore[operator]
            if args.show:
                for page, heading, right in s["detected"]:  # type: ignore[union-attr]
                    print(f"    p{page} {'ok ' if right else '-- '}{heading}")
    print(f"| **all** | | {total['found']} | {total['detected']} | "
          f"{total['right'] / max(total['detected'], 1):.2f} | {total['hit'] / max(total['found'], 1):.2f} |")


if __name__ == "__main__":
    main()
