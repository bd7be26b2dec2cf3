"""Synthetic questions for training passages, written by an instruction-tuned teacher GGUF.

InPars / GPL style: for each passage the teacher writes questions a technician could ask that the
passage answers. The instruction comes first and is the same for every call, so llama.cpp reuses
its KV cache and only the passage is prefilled; greedy decoding with a fixed seed makes a rerun
reproduce the file on the same build. The output (questions + passage ids and text hashes, never
the manual text itself) is the data set kept in the repository. Resumable: passages already in
--out are skipped, so it can run in the background and be stopped at any point.

    .venv/bin/python -m train.synth_questions --passages /tmp/train/passages.jsonl \\
        --model /tmp/instruments/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf --out train/data/questions.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from pathlib import Path
from typing import Any

SYSTEM = ("You write questions for a search engine over equipment manuals. Given a passage, write "
          "questions that a field technician could ask and that the passage answers. Each question "
          "must stand alone (name the device or part, never say 'the passage' or 'this section'), "
          "be at most 20 words, and be answerable from the passage. Write the first question with "
          "the manual's own terms and the second in a technician's everyday words. Answer with "
          "exactly two lines: 'Q1: ...' and 'Q2: ...'.")
PASSAGE_CHARS = 900
MAX_TOKENS = 80
_LINE_RE = re.compile(r"^\s*Q\s*\d\s*[:.)-]\s*(.+?)\s*$", re.I | re.M)
_BAD_RE = re.compile(r"\b(the|this) (passage|section|text|document|excerpt)\b", re.I)


def prompt_for(passage: dict[str, Any]) -> str:
    text = passage["text"][:PASSAGE_CHARS]
    where = passage.get("title") or passage.get("file", "")
    heading = f"Section: {passage['heading']}\n" if passage.get("heading") else ""
    return f"Manual: {where}\n{heading}Passage:\n{text}"


def parse_questions(reply: str) -> list[str]:
    """Keep well-formed, standalone questions (the teacher sometimes numbers, sometimes rambles)."""
    out = []
    for q in _LINE_RE.findall(reply):
        q = q.strip().strip('"')
        if not q.endswith("?"):
            q = q.rstrip(".") + "?"
        if 4 <= len(q.split()) <= 30 and not _BAD_RE.search(q) and q not in out:
            out.append(q)
    return out[:2]


def load_teacher(model: Path, threads: int, seed: int) -> Any:
    from llama_cpp import Llama

    return Llama(model_path=str(model), n_ctx=1024, n_threads=threads, n_threads_batch=threads,
                 seed=seed, verbose=False)


def ask(llm: Any, passage: dict[str, Any]) -> str:
    reply = llm.create_chat_completion(
        messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt_for(passage)}],
        max_tokens=MAX_TOKENS, temperature=0.0, top_k=1)
    return reply["choices"][0]["message"]["content"] or ""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--passages", type=Path, required=True)
    ap.add_argument("--model", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=23)
    ap.add_argument("--limit", type=int, default=0, help="stop after this many new passages (0: all)")
    args = ap.parse_args(argv)
    passages = [json.loads(line) for line in args.passages.read_text().splitlines() if line.strip()]
    random.Random(args.seed).shuffle(passages)  # any prefix of the run covers every manual
    done = set()
    if args.out.exists():
        done = {json.loads(line)["passage"] for line in args.out.read_text().splitlines() if line.strip()}
    llm = load_teacher(args.model, args.threads, args.seed)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    new = 0
    with args.out.open("a") as f:
        for p in passages:
            if p["id"] in done:
                continue
            t0 = time.monotonic()
            reply = ask(llm, p)
            row = {"passage": p["id"], "text_sha": p["text_sha"], "manual": p["manual"], "page": p["page"],
                   "questions": parse_questions(reply), "teacher": args.model.name,
                   "seconds": round(time.monotonic() - t0, 1)}
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
            f.flush()
            new += 1
            print(f"{new} {row['seconds']}s {row['questions']}", file=sys.stderr, flush=True)
            if args.limit and new >= args.limit:
                break
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
