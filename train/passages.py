"""The training corpus as passages: each manual parsed and chunked exactly as ingest does.

The reranker must learn the passages the gateway will rank, so they come from the gateway's own
parser (in its sandbox) and chunker with the shipped parameters, not from a second PDF reader.
Navigation chunks (contents, index) and near-empty ones are kept out: nobody asks a question that
a table of contents answers. Output: JSON lines, one passage each, with a stable id.

    .venv/bin/python -m train.passages --out /tmp/train/passages.jsonl
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path
from typing import Any

from train.check_corpus import corpus_dir

MIN_CHARS = 160


def passage_id(chunk: Any) -> str:
    return f"{chunk.manual_sha256[:12]}:{chunk.page}:{chunk.ordinal}"


def text_sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def corpus_passages(folder: Path) -> list[dict[str, Any]]:
    from ingest import ChunkParams, ParseLimits, chunk_manual, find_pdfs, parse_pdf
    from retrieval.search import is_navigation

    rows: list[dict[str, Any]] = []
    pdfs, _skipped = find_pdfs([folder])
    for pdf in pdfs:
        try:
            parsed = parse_pdf(pdf, ParseLimits(timeout_s=600, memory_mb=2048))
        except Exception as exc:  # one unreadable manual must not stop the corpus
            print(f"skipped {pdf.name}: {exc}")
            continue
        for chunk in chunk_manual(parsed, ChunkParams()):
            text = chunk.text.strip()
            if len(text) < MIN_CHARS or is_navigation(chunk.heading, text):
                continue
            rows.append({"id": passage_id(chunk), "chunk_id": chunk.chunk_id, "manual": parsed.sha256,
                         "file": parsed.file_name, "title": parsed.title, "page": chunk.page, "heading": chunk.heading,
                         "text": text, "text_sha": text_sha(text)})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=None)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    rows = corpus_passages(args.corpus or corpus_dir())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    manuals = len({r["manual"] for r in rows})
    print(f"{len(rows)} passages from {manuals} manuals -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
