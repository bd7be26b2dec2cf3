"""What the citation grammar costs llama.cpp: decode speed and time to first token, with and without it,
and with it sampled both ways (checked on the token drawn, as the gateway does, or over the whole vocabulary).

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
    from ingest.text.terms import content_terms

    want = content_terms(question)
    return sorted(pages, key=lambda h: -len(want & content_terms(h.text)))[:k]


SIDES = ("without", "checked", "whole")  # no grammar; grammar checked after the draw; over the whole vocabulary


def measure(gguf: str, questions: list[str], max_tokens: int) -> list[dict[str, Any]]:
    from gateway.answer.generation import prepare
    from gateway.config import AnswerSettings
    from runtimes.base import GenerationConfig, GenerationStats
    from runtimes.registry import create_runtime

    settings, pages, rows = AnswerSettings(), _pages(), []
    # two workers on the same GGUF: the gateway's order (runtimes.llamacpp.sampler) and llama-cpp-python's own
    checked = create_runtime("llamacpp", gguf, {"n_ctx": 4096})
    whole = create_runtime("llamacpp", gguf, {"n_ctx": 4096, "grammar_first": True})
    checked.load()
    whole.load()
    try:
        for i, question in enumerate(questions):
            config = GenerationConfig(max_tokens=max_tokens, temperature=0.0, seed=0)
            plan = prepare(config, checked, settings, question, _given(question, pages, settings.max_passages),
                           max_tokens)
            grammar, row = config.grammar, {"question": question, "prompt_tokens": plan.prompt_tokens}
            texts = {}
            for side in SIDES[i % 3:] + SIDES[:i % 3]:  # each side goes first as often as the others
                runtime = whole if side == "whole" else checked
                config.grammar = "" if side == "without" else grammar
                # another prompt first, so that no side finds this one in llama.cpp's prefix cache
                list(runtime.stream([{"role": "user", "content": f"Say {side}."}], GenerationConfig(max_tokens=1)))
                out = list(runtime.stream(plan.messages, config))
                stats = out[-1]
                assert isinstance(stats, GenerationStats)
                texts[side] = "".join(x for x in out if isinstance(x, str))
                row[side] = {"ttft_ms": stats.ttft_ms, "decode_tps": stats.decode_tps, "tokens": stats.output_tokens,
                             "redrawn": stats.backend_perf.get("grammar_redrawn")}
            row["same_text"] = texts["checked"] == texts["whole"]
            rows.append(row)
            print(json.dumps(row), flush=True)
    finally:
        checked.unload()
        whole.unload()
    return rows


def report(results: dict[str, list[dict[str, Any]]], max_tokens: int) -> str:
    med = statistics.median
    lines = ["## What the citation grammar costs llama.cpp (bench/experiments/grammar_cost.py)", "",
             f"The pipeline's prompts for {len(next(iter(results.values())))} sample questions (passages: the sample "
             f"manuals' pages sharing most words with each), up to {max_tokens} tokens at temperature 0, each question "
             "three times one after the other: without the citation grammar, with it as the gateway samples "
             "(the token drawn first, then checked against the grammar; the whole vocabulary constrained only when "
             "the grammar refuses it: runtimes/llamacpp/sampler.py, llama.cpp's common sampler order), and with it "
             "as llama-cpp-python 0.3.36 samples on its own (penalties, then the grammar over the whole vocabulary, "
             "then greedy, at every token: option `grammar_first = true`). Supervised llama.cpp workers as the "
             "gateway runs them; the order of the three rotates question by question; a one-word prompt before each, "
             "so that none finds the prompt in llama.cpp's prefix cache. Medians over the questions; ratios are "
             "medians of the per-question ratios to the run without the grammar.", "",
             "| model | prompt tokens | decode tok/s: none / checked / whole vocabulary | decode ratio to none: "
             "checked / whole vocabulary | TTFT ms: none / checked / whole vocabulary | redrawn tokens (checked) "
             "| same text |",
             "|---|---|---|---|---|---|---|"]
    for gguf, rows in results.items():
        def m(side: str, key: str, rows: list[dict[str, Any]] = rows) -> float:
            return float(med(r[side][key] for r in rows))

        def ratio(side: str, rows: list[dict[str, Any]] = rows) -> float:
            return float(med(r[side]["decode_tps"] / r["without"]["decode_tps"] for r in rows))

        redrawn = sum(r["checked"]["redrawn"] or 0 for r in rows)
        drawn = sum(r["checked"]["tokens"] for r in rows)
        same = sum(r["same_text"] for r in rows)
        lines.append(f"| {Path(gguf).name} | {med(r['prompt_tokens'] for r in rows):.0f} | "
                     + " / ".join(f"{m(s, 'decode_tps'):.1f}" for s in SIDES) + " | "
                     f"{ratio('checked'):.2f} / {ratio('whole'):.2f} | "
                     + " / ".join(f"{m(s, 'ttft_ms'):,.0f}" for s in SIDES) + f" | {redrawn} of {drawn} | "
                     f"{same} of {len(rows)} |")
    lines += ["", "Reading: the grammar leaves the prefill alone. Checked against the whole vocabulary at every "
              "token it halves decode speed; checked on the token drawn it costs little, because the model's own "
              "choice passes the grammar for all but a few tokens (mostly where a sentence must end in a "
              "citation), and at temperature 0 the text is the same token for token. At these speeds a 256-token "
              "answer decodes in "
              + "; ".join(f"{Path(g).name}: {256 / m_('checked', rows):.0f} s as the gateway samples, "
                          f"{256 / m_('whole', rows):.0f} s with the grammar over the whole vocabulary, "
                          f"{256 / m_('without', rows):.0f} s without a grammar"
                          for g, rows in results.items()) + "."]
    return "\n".join(lines)


def m_(side: str, rows: list[dict[str, Any]]) -> float:
    return float(statistics.median(r[side]["decode_tps"] for r in rows))


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
