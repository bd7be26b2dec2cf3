"""Can the default LLM rerank passages? Query likelihood with SmolLM2-135M on eval/dev (never eval/test).

No cross-encoder installs offline from the package registry (docs/bench/experiments/embedders.md), so the one
model on every gateway was tried as a zero-shot reranker: each of the top-k hybrid passages is
scored by the mean log-probability of the question given the passage ("Passage: ... A question
this passage answers: <question>"), alone and mixed with the hybrid rank (score = a * llm - ln rank).
Only the order of the top k changes, so hit@k stays as it is; hit@1 and MRR are what can move.

    python -m bench.experiments.llm_rerank --k 5        # prints the table; slow: k prompts per question
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.suite.retrieval_eval import build, shipped, split_paths
from gateway.qa.metrics import gold_pages


def question_likelihood(llm: Any, passage: str, question: str) -> float:
    """Mean log P(question tokens | passage prompt) under the model."""
    import numpy as np

    prefix = llm.tokenize(("Passage: " + passage[:1200] + "\nA question this passage answers:").encode())
    q = llm.tokenize((" " + question).encode(), add_bos=False)
    llm.reset()
    llm.eval(prefix + q)
    total = 0.0
    for i, tok in enumerate(q):
        logits = np.asarray(llm.scores[len(prefix) + i - 1], dtype=np.float64)
        top = logits.max()
        total += logits[tok] - (top + math.log(np.exp(logits - top).sum()))
    return total / max(1, len(q))


def scores(rows: list[dict[str, Any]], order: Any) -> tuple[float, float, float]:
    h1 = hk = mrr = 0.0
    for r in rows:
        ranked = order(r)
        rank = next((i for i, j in enumerate(ranked, 1) if r["gold"][j]), None)
        if rank:
            h1 += rank == 1
            hk += 1
            mrr += 1 / rank
    n = max(1, len(rows))
    return round(h1 / n, 3), round(hk / n, 3), round(mrr / n, 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=5)
    args = parser.parse_args()
    from llama_cpp import Llama

    from retrieval.embedders import load_embedder
    from retrieval.search import search
    from runtimes.defaults import default_gguf_path

    embedder = load_embedder()
    recipe, query = shipped()
    pdfs, questions = split_paths("dev")
    llm = Llama(model_path=str(default_gguf_path()), n_ctx=1024, logits_all=True, verbose=False, n_batch=512)
    rows = []
    with tempfile.TemporaryDirectory(prefix="mqa-rerank-") as tmp:
        store = build(pdfs, recipe, embedder, Path(tmp) / "dev")
        t0 = time.perf_counter()
        for q in (q for q in questions if q.get("answerable")):
            hits = search(store, embedder, q["question"], query.params(args.k))
            gold = gold_pages(q)
            rows.append({"gold": [(h.manual, h.page) in gold for h in hits],
                         "llm": [question_likelihood(llm, f"{h.title}. {h.heading}\n{h.text}", q["question"])
                                 for h in hits]})
        per_q = (time.perf_counter() - t0) / max(1, len(rows))
        store.open().chunks.close()
    orders = {"hybrid (shipped)": lambda r: list(range(len(r["gold"]))),
              "LLM query likelihood alone": lambda r: sorted(range(len(r["gold"])), key=lambda j: -r["llm"][j])}
    for a in (0.5, 1.0, 2.0, 4.0):
        orders[f"mixed, a = {a}"] = lambda r, a=a: sorted(range(len(r["gold"])),
                                                          key=lambda j: -(a * r["llm"][j] - math.log(j + 1)))
    print(f"| order (eval/dev, {len(rows)} answerable, top {args.k}) | hit@1 | hit@{args.k} | MRR |")
    print("|---|---|---|---|")
    for label, order in orders.items():
        h1, hk, mrr = scores(rows, order)
        print(f"| {label} | {h1} | {hk} | {mrr} |")
    print(f"\n{per_q:.1f} s per question for the {args.k} likelihoods.")


if __name__ == "__main__":
    main()
