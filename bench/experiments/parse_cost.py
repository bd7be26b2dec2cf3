"""Where an ingest's CPU goes: PDF parsing per manual against embedding, on the eval manuals.

Issue 12 asks for twice the ingest throughput of the torch default at equal retrieval quality. The
ingest already parses in background processes while the model embeds, and the two cores are busy
throughout, so throughput is bounded by the CPU seconds of the two parts. This script measures
both in this process, one manual at a time: `ingest.pdf.extract` (what the sandboxed parser runs)
with whole content streams and with the drawing dropped first (ingest.drawings; the two alternate
per manual and round, and must give the same text), and the default embedder over the chunks the
shipped chunker makes of it.

    python -m bench.experiments.parse_cost [--rounds 2]   # ~3 min; writes docs/bench/experiments/parse_cost.md
"""

from __future__ import annotations

import argparse
import time

from bench.harness import REPO, write_section


def run(rounds: int = 2) -> str:
    import statistics

    from ingest.chunker import chunk_manual
    from ingest.models import ChunkParams, PageText, ParsedManual
    from ingest.pdf import extract
    from retrieval.embedders import load_embedder, passage_text

    embedder = load_embedder()
    embedder.encode(["warm up"])
    params = ChunkParams()
    rows, totals = [], [0, 0, 0.0, 0.0, 0.0]
    pdfs = sorted((REPO / "eval" / "dev" / "manuals").glob("*.pdf")) + sorted(
        (REPO / "eval" / "test" / "manuals").glob("*.pdf"))
    differ = []
    for pdf in pdfs:
        cpu: dict[bool, list[float]] = {False: [], True: []}
        results = {}
        for r in range(rounds):
            for drop in ((False, True) if r % 2 == 0 else (True, False)):
                t = time.process_time()
                results[drop] = extract(pdf, 5000, drop_drawings=drop)
                cpu[drop].append(time.process_time() - t)
        if results[True] != results[False]:
            differ.append(pdf.name)
        data = results[True]
        whole_s, dropped_s = statistics.median(cpu[False]), statistics.median(cpu[True])
        parsed = ParsedManual(sha256="-", file_name=pdf.name, title=data["title"], page_count=data["page_count"],
                              size_bytes=pdf.stat().st_size, pages=[PageText(n, text, label)
                                                                     for n, text, label in data["pages"]],
                              pages_without_text=data["pages_without_text"], outline=data["outline"])
        chunks = chunk_manual(parsed, params)
        texts = [passage_text(c.heading, c.text, params.title_for(parsed.title)) for c in chunks]
        t = time.process_time()
        embedder.encode(texts)
        embed_s = time.process_time() - t
        rows.append(f"| {pdf.name} | {parsed.page_count} | {len(chunks)} | {whole_s:.2f} | {dropped_s:.2f} | "
                    f"{dropped_s / parsed.page_count * 1000:.0f} | {embed_s:.2f} |")
        for i, v in enumerate((parsed.page_count, len(chunks), whole_s, dropped_s, embed_s)):
            totals[i] += v
    pages, chunks_n, whole_total, parse_total, embed_total = totals
    share = parse_total / (parse_total + embed_total)
    before = whole_total + embed_total
    lines = ["## Where an ingest's CPU goes: parsing against embedding (bench/experiments/parse_cost.py)", "",
             "CPU seconds in one process, one manual at a time (eval/dev and eval/test manuals): "
             "`ingest.pdf.extract` (pypdf, what the sandboxed parser runs) with whole content streams and with "
             f"the drawing dropped first (ingest.drawings, shipped; medians of {rounds} alternating runs each), "
             "and the default embedder over the shipped chunker's passages. A real ingest runs parsing and "
             "embedding at once on the two cores.", "",
             "| manual | pages | chunks | parse CPU s, whole streams | parse CPU s, drawing dropped | "
             "ms per page (dropped) | embed CPU s |", "|---|---|---|---|---|---|---|",
             *rows,
             f"| all | {pages} | {chunks_n} | {whole_total:.1f} | {parse_total:.1f} | "
             f"{parse_total / pages * 1000:.0f} | {embed_total:.1f} |", "",
             "Same extracted text (title, pages, labels, outline) with and without dropping the drawing: "
             + ("**no**, for " + ", ".join(differ) if differ else f"yes, for all {len(pdfs)} manuals") + ".", "",
             f"Dropping the drawing takes parsing from {whole_total:.1f} to {parse_total:.1f} CPU s "
             f"({parse_total / whole_total:.2f}x), and parse + embed from {before:.1f} to "
             f"{parse_total + embed_total:.1f} CPU s ({(parse_total + embed_total) / before:.2f}x). The gain is on "
             "pages that are drawings: pypdf parses every operator of a content stream in Python to find the "
             f"text among them. Parsing is now {share:.0%} of the CPU; the embedder, a fixed cost per passage, "
             "is the rest.", "",
             ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--rounds", type=int, default=2, help="runs of each parse per manual")
    args = parser.parse_args()
    text = run(args.rounds)
    print(text)
    if not args.no_write:
        write_section(__spec__.name, text)


if __name__ == "__main__":
    main()
