"""OCR (issue 26): retrieval on scanned copies of the eval manuals against their own text layer.

Each eval manual (eval/dev, and eval/test less the manuals reserved for independent evaluation,
../shared/reserved_manuals.txt by sha256) is rasterised page by page (poppler's pdftoppm, greyscale)
at 150 and 300 dpi into an image-only PDF with the same file name (bench/scans.py): a scan without a
text layer. Each variant is parsed by the real sandboxed worker (ingest.sandbox.parse_many, 2
workers, the shipped OCR settings), chunked and embedded as ingest does, and searched with the
shipped settings; the two sample manuals (their text layer) are in every index as distractors:

- original, ingest.ocr = "off": the text layer alone, as before OCR;
- original, ingest.ocr = "auto" (shipped): image-only pages are now read too; which questions' gold
  pages those are, and where they rank before and after;
- scanned at 150 / 300 dpi, "auto": every page read by Tesseract.

Reported: hit@1 / hit@5 / MRR over answerable questions (a hit is a passage of the gold manual on a
gold page), OCR text against the original text layer per page (characters and words matched in
order, difflib; and the share of the text layer's words found anywhere on the OCR page), OCR CPU and
wall seconds per page (all children of this process: the parse workers, pdftoppm, tesseract), and
the peak RSS of any child process (the largest of the parse workers and their pdftoppm / tesseract;
the rasterising pdftoppm counts too).

    python -m bench.experiments.ocr_eval [--halves dev test] [--dpi 150 300] [--until 08:40]

Phases run 150 dpi on both halves, then 300; --until (UTC) skips the phases that would start after
it, and the record says which did not run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import difflib
import hashlib
import json
import re
import resource
import tempfile
import time
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.harness import REPO, peak_rss_mib, write_section

EVAL = REPO / "eval"
SAMPLES = REPO / "sample_manuals"
RESERVED = REPO.parent / "shared" / "reserved_manuals.txt"


def reserved() -> set[str] | None:
    if not RESERVED.is_file():
        return None
    return {line.strip() for line in RESERVED.read_text().splitlines() if re.fullmatch(r"[0-9a-f]{64}", line.strip())}


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@dataclass
class Parsed:
    manuals: list[Any]
    pages: int
    cpu_s: float
    wall_s: float
    failed: list[tuple[str, str]] = field(default_factory=list)


def parse(pdfs: list[Path], ocr: str) -> Parsed:
    from ingest.models import IngestError, ParseLimits
    from ingest.sandbox import parse_many

    limits = ParseLimits(timeout_s=1200, ocr=ocr)  # a busy box parses slowly
    cpu, wall = children_cpu(), time.perf_counter()
    manuals, failed = [], []
    for path, result in parse_many(pdfs, limits, workers=2):
        if isinstance(result, IngestError):
            failed.append((path.name, str(result)))
        else:
            manuals.append(result)
    manuals.sort(key=lambda m: m.file_name)
    return Parsed(manuals, sum(m.page_count for m in manuals), children_cpu() - cpu, time.perf_counter() - wall,
                  failed)


def build(manuals: list[Any], embedder: Any, folder: Path) -> Any:
    """An index version of these parsed manuals, written and activated as ingest does."""
    from ingest.models import ChunkParams, ParseLimits
    from retrieval.builder import Embedding, Entry, IngestReport, embedding_info
    from retrieval.versions import IndexStore, ocr_record

    params = ChunkParams()
    entries = [e for e in Embedding(embedder, None).entries([(m, None) for m in manuals], params)
               if isinstance(e, Entry)]
    store = IndexStore(folder)
    store._publish(IngestReport(), None, embedding_info(embedder), params, entries, ocr_record(ParseLimits()))
    return store


def ranks(store: Any, embedder: Any, questions: list[dict[str, Any]]) -> dict[str, int | None]:
    from gateway.qa.metrics import gold_pages
    from retrieval.search import search
    from retrieval.types import SearchParams

    out: dict[str, int | None] = {}
    for q in questions:
        if not q.get("answerable"):
            continue
        hits = search(store, embedder, q["question"], SearchParams(k=5))
        gold = gold_pages(q)
        out[q["id"]] = next((i for i, h in enumerate(hits, start=1) if (h.manual, h.page) in gold), None)
    return out


def scores(found: dict[str, int | None]) -> tuple[float, float, float]:
    n = len(found) or 1
    return (sum(r == 1 for r in found.values()) / n, sum(r is not None for r in found.values()) / n,
            sum(1.0 / r for r in found.values() if r) / n)


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text)).strip()


def accuracy(reference: list[Any], ocr: list[Any]) -> dict[str, float]:
    """OCR pages against the text layer's, over pages whose text layer holds >= 20 characters."""
    by_name = {m.file_name: m for m in ocr}
    chars = words = bag = total_chars = total_words = 0.0
    pages = 0
    for ref in reference:
        scanned = by_name.get(ref.file_name)
        if scanned is None:
            continue
        got = {p.number: p.text for p in scanned.pages}
        for page in ref.pages:
            if page.number in ref.ocr or len(_norm(page.text).replace(" ", "")) < 20:
                continue
            a, b = _norm(page.text), _norm(got.get(page.number, ""))
            matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
            chars += sum(block.size for block in matcher.get_matching_blocks())
            wa, wb = a.lower().split(), b.lower().split()
            words += sum(block.size for block in difflib.SequenceMatcher(None, wa, wb, autojunk=False)
                         .get_matching_blocks())
            bag += sum((Counter(wa) & Counter(wb)).values())
            total_chars += len(a)
            total_words += len(wa)
            pages += 1
    return {"pages": pages, "chars": chars / max(1.0, total_chars), "words": words / max(1.0, total_words),
            "bag": bag / max(1.0, total_words)}


def mean_confidence(manuals: list[Any]) -> float:
    pages = [p.confidence for m in manuals for p in m.ocr.values()]
    return sum(pages) / len(pages) if pages else float("nan")


def past(until: str | None) -> bool:
    if not until:
        return False
    hh, mm = (int(x) for x in until.split(":"))
    now = dt.datetime.now(dt.timezone.utc)
    return (now.hour, now.minute) >= (hh, mm)


def run(halves: list[str], dpis: list[int], until: str | None, only: str = "", write: Any = None) -> str:
    """The record's Markdown; `write(text)` is called after every phase with the record so far."""
    from bench.scans import scanned_copy
    from retrieval.embedders import load_embedder

    embedder = load_embedder()
    embedder.encode(["warm up"])
    keep_out = reserved()
    tmp = Path(tempfile.mkdtemp(prefix="manualqa-ocr-eval-"))
    distractors = parse(sorted(SAMPLES.glob("*.pdf")), "off")
    rows: list[str] = []
    acc_rows: list[str] = []
    cost_rows: list[str] = []
    image_rows: list[str] = []
    notes: list[str] = []
    def render() -> str:
        lines = [
            "## OCR of scanned manuals (bench/experiments/ocr_eval.py, issue 26)", "",
            "Scanned copies: every page of each eval manual rasterised (pdftoppm, greyscale) into an image-only "
            "PDF, read back by the shipped OCR (ingest.ocr = \"auto\": pdftoppm at ingest.ocr_dpi = 300, Tesseract "
            "5, eng) in the sandboxed parse worker, 2 workers. Search with the shipped settings; the two sample "
            "manuals (text layer) are in every index as distractors. Goal (issue 26): hit@5 on a scanned copy >= "
            "0.95x the original's.", "",
            "| half | manuals | answerable | hit@1 | hit@5 | MRR | hit@5 / original's |",
            "|---|---|---|---|---|---|---|",
            *rows, "",
            "OCR text against the original text layer, per page with a text layer (>= 20 characters): characters and "
            "words matched in order (difflib matching blocks / text-layer length; reading order differs on tables "
            "and columns, which counts against OCR here), the text layer's words found anywhere on the OCR page, "
            "and Tesseract's mean word confidence.", "",
            "| half | dpi | pages | chars in order | words in order | words anywhere | mean confidence |",
            "|---|---|---|---|---|---|---|", *acc_rows, "",
            "Cost: CPU seconds per page of every child process (parse workers, pdftoppm, tesseract; one thread each), "
            "and wall-clock seconds per page with 2 workers on the shared 2 cores (other work was running).", "",
            "| half | dpi | pages | CPU s / page | wall s / page (2 workers) | pages OCR failed | manuals failed |",
            "|---|---|---|---|---|---|---|", *cost_rows, "",
            f"Peak RSS of any child process over the run: {peak_rss_mib(children=True):.0f} MiB (the largest of the "
            "parse workers with their pdftoppm / tesseract, the rasterising pdftoppm included; the worker's cap is "
            "ingest.memory_mb = 1024).", "",
            "Image-only pages of the original manuals that \"auto\" now reads, and the answerable questions whose gold "
            "pages are among them (rank of the first gold passage in the top 5, None: not in it; text layer only -> "
            "with OCR):", "",
            "| half | pages read by OCR / question |", "|---|---|", *image_rows, "",
            *notes, "",
        ]

        return "\n".join(lines)

    def phase_done() -> None:
        if write is not None:
            write(render())

    prepared: dict[str, dict[str, Any] | None] = {}

    def prepare(half: str) -> dict[str, Any] | None:
        """The half's manuals, questions and its originals' results (once; None: not run)."""
        if half in prepared:
            return prepared[half]
        prepared[half] = None
        if half == "test" and keep_out is None:
            notes.append(f"eval/test skipped: {RESERVED} is missing, so the reserved manuals cannot be left out.")
            return None
        pdfs = [p for p in sorted((EVAL / half / "manuals").glob("*.pdf"))
                if sha(p) not in (keep_out or set()) and only in p.name]
        names = {p.name for p in pdfs}
        questions = [json.loads(line) for line in (EVAL / half / "questions.jsonl").read_text().splitlines()
                     if line.strip()]
        questions = [q for q in questions if q.get("manual") in names]
        left = sorted(p.name for p in (EVAL / half / "manuals").glob("*.pdf")
                      if p.name not in names and only in p.name)
        if only:
            notes.append(f"eval/{half}: only the manuals whose name holds {only!r}: {', '.join(sorted(names))}.")
        if left:
            notes.append(f"eval/{half}: left out as reserved for independent evaluation: {', '.join(left)}.")
        if past(until):
            notes.append(f"eval/{half}: not run (past --until {until}).")
            return None
        original = {mode: parse(pdfs, mode) for mode in ("off", "auto")}
        found = {}
        for mode, parsed in original.items():
            store = build(parsed.manuals + distractors.manuals, embedder, tmp / f"{half}-original-{mode}")
            found[mode] = ranks(store, embedder, questions)
            label = "text layer only (ocr off)" if mode == "off" else "text layer + OCR of image pages (auto)"
            rows.append(f"| {half} | original, {label} | {len(found[mode])} | "
                        + " | ".join(f"{v:.3f}" for v in scores(found[mode])) + " | |")
        ocr_pages = {m.file_name: sorted(m.ocr) for m in original["auto"].manuals if m.ocr}
        image_rows.append(f"| {half} | " + ("; ".join(f"{n} p. {', '.join(map(str, p))}" for n, p in ocr_pages.items())
                                            or "none") + " |")
        for q in questions:
            pages = set(q.get("pages") or [])
            if q.get("answerable") and pages & set(ocr_pages.get(q["manual"], [])):
                image_rows.append(f"| {half} | `{q['id']}` gold p. {sorted(pages)} (OCR'd: "
                                  f"{sorted(pages & set(ocr_pages[q['manual']]))}): rank {found['off'][q['id']]} "
                                  f"-> {found['auto'][q['id']]} |")
        phase_done()
        prepared[half] = {"pdfs": pdfs, "questions": questions, "original": original, "base": scores(found["off"])}
        return prepared[half]

    # 150 dpi on both halves first, then 300: the phases --until leaves out are the last ones
    for dpi in dpis:
        for half in halves:
            ready = prepare(half)
            if ready is None:
                continue
            if past(until):
                notes.append(f"eval/{half} at {dpi} dpi: not run (past --until {until}).")
                continue
            folder = tmp / f"{half}-{dpi}"
            folder.mkdir(parents=True)
            for pdf in ready["pdfs"]:
                scanned_copy(pdf, folder / pdf.name, dpi)
            scans = parse(sorted(folder.glob("*.pdf")), "auto")
            store = build(scans.manuals + distractors.manuals, embedder, tmp / f"{half}-{dpi}-index")
            got = ranks(store, embedder, ready["questions"])
            s = scores(got)
            rows.append(f"| {half} | scanned at {dpi} dpi, OCR (auto) | {len(got)} | "
                        + " | ".join(f"{v:.3f}" for v in s) + f" | {s[1] / ready['base'][1]:.2f} |")
            acc = accuracy(ready["original"]["off"].manuals, scans.manuals)
            acc_rows.append(f"| {half} | {dpi} | {acc['pages']} | {acc['chars']:.3f} | {acc['words']:.3f} | "
                            f"{acc['bag']:.3f} | {mean_confidence(scans.manuals):.1f} |")
            unread = sum(len([r for r in m.unread.values() if r.startswith("OCR failed")]) for m in scans.manuals)
            cost_rows.append(f"| {half} | {dpi} | {scans.pages} | {scans.cpu_s / max(1, scans.pages):.2f} | "
                             f"{scans.wall_s / max(1, scans.pages):.2f} | {unread} | "
                             f"{', '.join(f for f, _ in scans.failed) or 'none'} |")
            phase_done()
    return render()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--halves", nargs="+", default=["dev", "test"], choices=["dev", "test"])
    parser.add_argument("--dpi", nargs="+", type=int, default=[150, 300])
    parser.add_argument("--until", default=None, help="UTC HH:MM: phases that would start later are skipped")
    parser.add_argument("--only", default="", help="only the manuals whose file name holds this")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()

    def write(text: str) -> None:
        write_section(__spec__.name, text)

    text = run(args.halves, args.dpi, args.until, args.only, None if args.no_write else write)
    print(text)
    if not args.no_write:
        write(text)


if __name__ == "__main__":
    main()
