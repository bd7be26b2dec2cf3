"""train.finetune_embedder's batches: in-batch negatives must not hold a question's own passage.

Two questions about one passage in one batch would each see the other's copy of their positive as
a negative, and the loss would push the model away from the right answer.
"""

from __future__ import annotations

import random

from train.finetune_embedder import batches


def test_no_passage_twice_in_a_batch_and_every_question_once() -> None:
    rows = [{"question": f"q{i}", "positive": f"p{i % 7}", "negatives": [f"p{(i + 1) % 7}", "x"]} for i in range(40)]
    out = batches(rows, 8, random.Random(1), hard=1)
    assert sorted(r["question"] for b in out for r in b) == sorted(r["question"] for r in rows)
    for batch in out:
        positives = [r["positive"] for r in batch]
        assert len(positives) == len(set(positives)) and len(batch) <= 8
        # no question's hard-negative candidate is another question's positive in the same batch
        assert not {r["negatives"][0] for r in batch} & set(positives)
