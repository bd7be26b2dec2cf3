"""Which manuals' titles change if a metadata title whose words the front pages lack is stale.

Issue 47 item 2. ingest.titles.choose_title keeps a PDF's metadata title unless it is generic or stale
(ingest.titles.is_stale_title). Three staleness rules are compared on the same first pages:
- "version" (before issue 47 item 2): only a version the front pages replace ("... V1.0" metadata on
  a V3.0 cover);
- "reverted" (commit f7dbe7f took it out): that, or a metadata title with less than --share of its
  content words (ingest.text.terms.content_terms) among the front pages' content words, unless the
  front text is shorter than --min-front characters (a cover with a word or two says nothing);
- "product": whatever ingest.titles.is_stale_title does now.
A row is printed where the product's title differs from the version rule's or the reverted rule's.

Only the first two pages are read, the way ingest.pdf.extract reads them (drawings stripped, page 1's
font sizes for its largest text, normalise_text), without OCR and without embedding: a cover with
no text layer gives an empty front text here, where ingest with OCR on might read some.

Development manuals only; any file whose sha256 is listed in ../shared/reserved_manuals.txt is
skipped, and test splits must not be passed.

    python -m bench.experiments.stale_titles eval/dev/manuals eval/dev2/manuals ... [--all]
"""

from __future__ import annotations

import argparse
import hashlib
import math
import sys
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RESERVED = REPO.parent / "shared" / "reserved_manuals.txt"


def reserved() -> set[str]:
    if not RESERVED.exists():
        return set()
    return {line.strip().lower() for line in RESERVED.read_text(encoding="utf-8").splitlines()
            if len(line.strip()) == 64 and not line.startswith("#")}


def front_pages(path: Path) -> tuple[str | None, str, str, str]:
    """(metadata title, largest text of page 1, page 1 text, pages 1-2 text) as ingest.pdf.extract
    computes them, without OCR."""
    from ingest.drawings import strip_drawings
    from ingest.pdf import normalise_text
    from ingest.pdf_open import open_reader
    from ingest.titles import _largest_text

    reader, page_count, meta_title = open_reader(path, 100000)
    try:
        strip_drawings(reader)
    except Exception:  # noqa: BLE001 - as extract: the pages keep their streams
        pass
    runs: list[tuple[float, str]] = []

    def collect(text: str, cm: list[float], tm: list[float], _font: object, size: float) -> None:
        scale = math.sqrt(abs(tm[0] * tm[3] - tm[1] * tm[2]) * abs(cm[0] * cm[3] - cm[1] * cm[2]))
        runs.append((round(float(size) * scale, 1), text))

    pages: list[str] = []
    for number in range(1, min(page_count, 2) + 1):
        try:
            raw = reader.pages[number - 1].extract_text(visitor_text=collect if number == 1 else None)
        except Exception:  # noqa: BLE001 - as extract: an unreadable page is empty
            raw = ""
        pages.append(normalise_text(raw or ""))
    return meta_title, _largest_text(runs), pages[0], "\n".join(pages)


def version_rule(title: str, front_text: str) -> bool:
    from ingest.titles import _VERSION

    said = {m.group(1) for m in _VERSION.finditer(title)}
    shown = {m.group(1) for m in _VERSION.finditer(front_text)}
    return bool(said and shown and not said & shown)


def share_rule(share: float, min_front: int) -> Callable[[str, str], bool]:
    from ingest.text.terms import content_terms

    def stale(title: str, front_text: str) -> bool:
        if version_rule(title, front_text):
            return True
        if len(front_text.strip()) < min_front:
            return False
        words = content_terms(title)
        return bool(words) and len(words & content_terms(front_text)) < share * len(words)

    return stale


def title_with(rule: Callable[[str, str], bool] | None, meta: str | None, big: str, page1: str, stem: str,
               front: str) -> str:
    """ingest.titles.choose_title with its staleness test swapped for `rule` (None: the product's own)."""
    import ingest.titles as titles

    if rule is None:
        return titles.choose_title(meta, big, page1, stem, front)
    saved = titles.is_stale_title
    titles.is_stale_title = rule
    try:
        return titles.choose_title(meta, big, page1, stem, front)
    finally:
        titles.is_stale_title = saved


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="*", type=Path, help="folders of development PDFs (never a test split)")
    parser.add_argument("--share", type=float, default=0.5, help="share of the title's content words needed")
    parser.add_argument("--min-front", type=int, default=60, help="front text shorter than this: never stale")
    parser.add_argument("--all", action="store_true", help="print every manual, not only changed titles")
    args = parser.parse_args(argv)
    if any(part.endswith("test") for folder in args.folders for part in folder.resolve().parts):
        parser.error("test splits are not measured here")
    from ingest.text.terms import content_terms
    from ingest.titles import meaningful_title

    skip = reserved()
    rule = share_rule(args.share, args.min_front)
    files = sorted({p.resolve() for folder in args.folders for p in folder.rglob("*") if p.suffix.lower() == ".pdf"})
    changed = skipped = failed = 0
    print("| manual | metadata title | content words on front (front chars) | version | reverted | product |")
    print("|---|---|---|---|---|---|")
    for path in files:
        if hashlib.sha256(path.read_bytes()).hexdigest() in skip:
            skipped += 1
            continue
        try:
            meta, big, page1, front = front_pages(path)
        except Exception as exc:  # noqa: BLE001 - one broken file does not end the survey
            failed += 1
            print(f"{path.name}: {type(exc).__name__}: {exc}", file=sys.stderr)
            continue
        old = title_with(version_rule, meta, big, page1, path.stem, front)
        new = title_with(rule, meta, big, page1, path.stem, front)
        now = title_with(None, meta, big, page1, path.stem, front)
        words = content_terms(meaningful_title(meta))
        found = f"{len(words & content_terms(front))}/{len(words)}" if words else "-"
        if old != now:
            changed += 1
        if old != now or new != now or args.all:
            name = path.relative_to(REPO) if path.is_relative_to(REPO) else \
                path.relative_to(REPO.parent) if path.is_relative_to(REPO.parent) else path.name
            cells = [str(name), meaningful_title(meta) or "-", f"{found} ({len(front.strip())} ch)", old, new, now]
            print("| " + " | ".join(c.replace("|", "/") for c in cells) + " |")
    print(f"\n{len(files)} PDFs: {skipped} reserved (skipped), {failed} unreadable, "
          f"{changed} titles differ between the version rule and the product "
          f"(reverted rule: share={args.share}, min_front={args.min_front})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
