"""Why does the 1.5B instrument decline? Its declined eval/dev questions asked again with other prompts.

In bench/suite/model_answers.py's dev run, Qwen2.5-Coder-1.5B-Instruct answered "The manuals do not
cover this." to most answerable questions, though the excerpt it read held the gold value for most
of them. This asks those questions again (the same passages, the same excerpts, the grammar) with
the system prompt as shipped and with variants, and counts declines and correct drafts (the gold
answer's numbers all present, else token F1 >= 0.5). eval/dev only: a choice made here is then
measured on eval/test by bench/suite/model_answers.py.

    python -m bench.experiments.decline_prompt --limit 8
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import time
from pathlib import Path
from typing import Any

from bench.harness import write_section
from bench.suite.model_answers import WORK, assemble
from gateway.answer import prompting
from gateway.answer.grammar import DECLINE, citation_grammar
from gateway.qa.metrics import CORRECT, correctness
from retrieval.manifest import CHUNKS_DB
from retrieval.types import Hit
from retrieval.versions import IndexStore

SHIPPED = prompting.SYSTEM_PROMPT
_RULE3 = '3. If the passages do not contain the answer, say: "The manuals do not cover this." Do not guess.'
# name -> (system prompt, excerpt_chars: 0 = whole passages, grammar on or off)
VARIANTS: dict[str, tuple[str, int, bool]] = {
    "shipped": (SHIPPED, 500, True),
    # The decline as the last resort, after the instruction to answer from what is there.
    "answer-first": (SHIPPED.replace(_RULE3, (
        "3. The passages usually contain the answer, often in other words than the question's: find it and "
        'state it. Only if no passage says anything about it, say: "The manuals do not cover this." '
        "Do not guess.")), 500, True),
    "shipped, whole passages": (SHIPPED, 0, True),
    "no decline rule, no grammar": (SHIPPED.replace(_RULE3, "3. Do not guess."), 500, False),
    "no decline rule, grammar": (SHIPPED.replace(_RULE3, "3. Do not guess."), 500, True),
}


def declined(model: str = "qwen1.5b", split: str = "dev", label: str = "after") -> list[dict[str, Any]]:
    """The answerable questions of that run whose draft was the decline, with the passages it gave."""
    db = sqlite3.connect(str(WORK / split / "gateway.db"))
    db.row_factory = sqlite3.Row
    run = db.execute("SELECT id FROM replay_runs WHERE label = ? ORDER BY id DESC LIMIT 1",
                     [f"{model}:{label}"]).fetchone()
    out = []
    store = IndexStore(WORK / split)
    for it in db.execute("SELECT * FROM replay_items WHERE run_id = ? ORDER BY position", [run["id"]]):
        q = json.loads(it["data"])["question"]
        ans = db.execute("SELECT * FROM answers WHERE id = ?", [it["answer_id"]]).fetchone()
        if not q.get("answerable") or ans is None or not ans["draft"].startswith(DECLINE[:-1]):
            continue
        version = store.open(ans["index_version"])
        chunks = sqlite3.connect(str(version.path / CHUNKS_DB))
        hits = []
        for p in json.loads(ans["passages"]):
            if not p.get("given"):
                continue
            heading, text, title = chunks.execute(
                "SELECT c.heading, c.text, m.title FROM chunks c JOIN manuals m ON m.sha256 = c.manual_sha256 "
                "WHERE c.chunk_id = ?", [p["chunk_id"]]).fetchone()
            fields = {k: v for k, v in p.items() if k in Hit.__dataclass_fields__}
            hits.append(Hit(**{**fields, "heading": heading, "text": text, "title": title}))
        out.append({"question": q, "hits": hits})
    return out


def ask(llm: Any, system: str, question: str, hits: list[Hit], excerpt_chars: int = 500,
        constrain: bool = True) -> tuple[str, float]:
    bodies = [prompting.format_passage(i + 1, h, prompting.excerpt(question, h.text, excerpt_chars))
              for i, h in enumerate(hits)]
    messages = [{"role": "system", "content": system},
                {"role": "user", "content": prompting.user_message(question, bodies)}]
    from llama_cpp import LlamaGrammar

    grammar = LlamaGrammar.from_string(citation_grammar(len(hits)), verbose=False) if constrain else None
    t0 = time.perf_counter()
    out = llm.create_chat_completion(messages=messages, max_tokens=160, temperature=0.0, seed=0,
                                     repeat_penalty=1.1, grammar=grammar)
    return out["choices"][0]["message"]["content"].strip(), time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=8)
    ap.add_argument("--only", nargs="*", default=None, help="variant names to run (default: all)")
    args = ap.parse_args()
    from llama_cpp import Llama

    gguf = Path(assemble()["qwen1.5b"].read_text().split('path = "')[1].split('"')[0])
    llm = Llama(str(gguf), n_ctx=4096, n_threads=os.cpu_count() or 2, verbose=False)
    cases = declined()[: args.limit]
    rows = {name: {"declined": 0, "correct": 0, "s": 0.0} for name in VARIANTS}
    lines = []
    for case in cases:
        q = case["question"]
        for name, (system, chars, constrain) in VARIANTS.items():
            if args.only and name not in args.only:
                continue
            text, took = ask(llm, system, q["question"], case["hits"], chars, constrain)
            r = rows[name]
            r["declined"] += text.startswith(DECLINE[:-1])
            r["correct"] += correctness(text, q.get("answer") or "") >= CORRECT
            r["s"] += took
            lines.append(f"| {q['id']} | {name} | {text[:160].replace('|', '/')} |")
    table = ["## Why the 1.5B instrument declines (eval/dev, its declined answerable questions asked again)", "",
             f"{len(cases)} answerable eval/dev questions that Qwen2.5-Coder-1.5B-Instruct declined in "
             "bench/suite/model_answers.py's `after` run, asked again with the same passages and excerpts "
             "and the citation grammar, one system prompt at a time.", "",
             "| system prompt | declined | correct draft | seconds |", "|---|---|---|---|"]
    for name, r in rows.items():
        if args.only and name not in args.only:
            continue
        table.append(f"| {name} | {r['declined']} of {len(cases)} | {r['correct']} | {r['s']:.0f} |")
    table += ["", "| question | prompt | draft |", "|---|---|---|", *lines]
    text = "\n".join(table)
    write_section(__spec__.name, text, argv=[f"--limit={args.limit}", *(["--only", *args.only] if args.only else [])])
    print(text)


if __name__ == "__main__":
    main()
