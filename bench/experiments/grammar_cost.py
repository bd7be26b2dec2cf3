"""What the citation grammar costs llama.cpp: decode speed and time to first token, with and without it.

Since issue 25 the gateway constrains its model with a GBNF grammar (every sentence ends with a
citation of a passage given: gateway.answer.grammar). The server benchmark's run D, with the grammar
on all its sides, decodes SmolLM2 at about 45 tokens/s where the same runtime without it had decoded
70-90. This measures the grammar alone: the same runtime (a supervised llama.cpp worker, as the
gateway runs it), the same prompts (the pipeline's own, gateway.answer.generation.prepare, over the
sample manuals' pages sharing most words with each sample question), the same settings, with and
without `config.grammar`, interleaved question by question (alternating which goes first).

    python -m bench.experiments.grammar_cost [--questions 6] [--max-tokens 64] [--gguf PATH ...] [--no-write]

A one-off record: it writes docs/bench/experiments/grammar_cost.md; `make bench` does not rerun it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

from bench.harness import REPO, write_section


def _pages() -> list[Any]:
    """Every page of the sample manuals as a Hit (the passage a prompt quotes)."""
    from pypdf import PdfReader

    from retrieval.types import Hit

    hits = []
    for pdf in sorted((REPO / "sample_manuals").glob("*.pdf")):
        for n, page in enumerate(PdfReader(pdf).pages, start=1):
            text = page.extract_text() or ""
            if text.strip():
                hits.append(Hit(chunk_id=f"{pdf.stem}-{n}", manual=pdf.name, title=pdf.stem, manual_sha256="0" * 64,
                                page=n, heading="", text=text, score=0.0, dense_rank=None, lexical_rank=None,
                                dense_score=None))
    return hits


def _given(question: str, pages: list[Any], k: int) -> list[Any]:
    from gateway.answer.citations import content_terms

    want = content_terms(question)
    return sorted(pages, key=lambda h: -len(want & content_terms(h.text)))[:k]


def measure(gguf: str, questions: list[str], max_tokens: int) -> list[dict[str, Any]]:
    from gateway.answer.generation import prepare
    from gateway.config import AnswerSettings
    from runtimes.base import GenerationConfig, GenerationStats
    from runtimes.registry import create_runtime

    settings, pages, rows = AnswerSettings(), _pages(), []
    runtime = create_runtime("llamacpp", gguf, {"n_ctx": 4096})
    runtime.load()
    try:
        for i, question in enumerate(questions):
            config = GenerationConfig(max_tokens=max_tokens, temperature=0.0, seed=0)
            plan = prepare(config, runtime, settings, question, _given(question, pages, settings.max_passages),
                           max_tokens)
            grammar, row = config.grammar, {"question": question, "prompt_tokens": plan.prompt_tokens}
            for side in (("with", "without") if i % 2 == 0 else ("without", "with")):
                config.grammar = grammar if side == "with" else ""
                # another prompt first, so that neither side finds this one in llama.cpp's prefix cache
                list(runtime.stream([{"role": "user", "content": f"Say {side}."}], GenerationConfig(max_tokens=1)))
                out = [x for x in runtime.stream(plan.messages, config) if isinstance(x, GenerationStats)][-1]
                row[side] = {"ttft_ms": out.ttft_ms, "decode_tps": out.decode_tps, "tokens": out.output_tokens}
            rows.append(row)
            print(json.dumps(row), flush=True)
    finally:
        runtime.unload()
    return rows


def report(results: dict[str, list[dict[str, Any]]], max_tokens: int) -> str:
    med = statistics.median
    lines = ["## What the citation grammar costs llama.cpp (bench/experiments/grammar_cost.py)", "",
             f"The pipeline's prompts for {len(next(iter(results.values())))} sample questions (passages: the sample "
             f"manuals' pages sharing most words with each), up to {max_tokens} tokens at temperature 0, each question "
             "with and without the citation grammar one after the other on the same supervised llama.cpp worker "
             "(alternating which goes first; a one-word prompt before each, so that neither finds the prompt in "
             "llama.cpp's prefix cache). Medians over the questions; ratios are medians of the per-question "
             "ratios.", "",
             "| model | prompt tokens | TTFT ms with / without | decode tok/s with / without | decode ratio with / "
             "without | TTFT ratio with / without |", "|---|---|---|---|---|---|"]
    for gguf, rows in results.items():
        def m(side: str, key: str, rows: list[dict[str, Any]] = rows) -> float:
            return float(med(r[side][key] for r in rows))

        decode = med(r["with"]["decode_tps"] / r["without"]["decode_tps"] for r in rows)
        ttft = med(r["with"]["ttft_ms"] / r["without"]["ttft_ms"] for r in rows)
        lines.append(f"| {Path(gguf).name} | {med(r['prompt_tokens'] for r in rows):.0f} | "
                     f"{m('with', 'ttft_ms'):,.0f} / {m('without', 'ttft_ms'):,.0f} | "
                     f"{m('with', 'decode_tps'):.1f} / {m('without', 'decode_tps'):.1f} | {decode:.2f} | {ttft:.2f} |")
    lines += ["", "Reading: the grammar leaves the prefill alone and slows every decoded token (llama-cpp-python "
              "0.3.36 chains penalties, the grammar, then greedy: the grammar is checked against the whole "
              "vocabulary at every token, where llama.cpp's common sampler checks only the token it drew). At "
              "these speeds a 256-token answer decodes in "
              + "; ".join(f"{Path(g).name}: {256 / float(med(r['with']['decode_tps'] for r in rows)):.0f} s with it, "
                          f"{256 / float(med(r['without']['decode_tps'] for r in rows)):.0f} s without"
                          for g, rows in results.items())
              + ". Whether what it buys (drafts the support check can read: issue 25) is worth that is not measured "
              "here."]
    return "\n".join(lines)


def main() -> None:
    from runtimes.defaults import default_gguf_path

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=6)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--gguf", action="append", default=[], help="a GGUF to measure (default: the built-in SmolLM2)")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    lines = (REPO / "sample_manuals" / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    questions = [json.loads(line)["question"] for line in lines if line.strip()][: args.questions]
    ggufs = args.gguf or [str(default_gguf_path())]
    text = report({g: measure(g, questions, args.max_tokens) for g in ggufs}, args.max_tokens)
    print(text)
    if not args.no_write:
        write_section(__spec__.name, text, argv=sys.argv[1:])


if __name__ == "__main__":
    main()
