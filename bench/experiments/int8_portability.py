"""The built-in int8 embedder on CPUs with and without VNNI: same question, same vector?

onnxruntime multiplies the embedder's u8 activations by its s8 weights (MatMulInteger) with the CPU's
best kernel. With AVX-512 VNNI or AMX (recent Intel, AMD Zen 4) the products are summed exactly in
int32. With AVX2 alone (AMD EPYC before Zen 4, older Intel) the kernel uses an instruction that adds
two u8 x s8 products into a *saturating* int16: with full-range weights (+-127) a pair can reach
2 x 255 x 127 = 64,770 and is clipped at 32,767. Then an index built on one gateway and queried on
another (or a benchmark run on another machine) sees other vectors. Weights quantized to 7 bits
(`reduce_range`, [-64, 63]) keep every pair under 2 x 255 x 64 = 32,640: the same integers on every CPU.

No AVX2-only CPU is at hand, so the AVX2 kernel is emulated: the ONNX reference evaluator runs the
model with MatMulInteger summed pairwise with int16 saturation (as the AVX2 kernel pairs adjacent
values of the inner dimension), next to an exact one. Measured for the model before (full range) and
the one shipped now (reduce_range):
1. vectors: int8 weight range, pairs clipped, cosine of the AVX2-emulated vector to the exact one;
2. retrieval: each half's index built here with the model, questions embedded here and by the
   emulated AVX2 kernel (a gateway on another CPU querying an index built here), shipped search;
3. cost: passages per second and query milliseconds, side by side in one run.

    .venv/bin/python -m bench.experiments.int8_portability --data /tmp/srk --work /tmp/int8p
    # --data: halves already built with the old model (bench/experiments/sentence_terms.py --data)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.harness import write_section

SPLITS = ("dev", "dev2", "dev3", "test")
QUERY_SIDES = ("onnxruntime here (VNNI / AMX)", "reference, exact int32 sums", "reference, AVX2 int16 pairs")
INT16 = (-32768, 32767)


def reference_session(onnx_file: Path, *, avx2: bool, clipped: list[int]) -> Any:
    """A session-like object (``run(None, feeds)``) on onnx's reference evaluator, exact or AVX2-like."""
    import onnx
    from onnx.reference import ReferenceEvaluator
    from onnx.reference.op_run import OpRun

    class MatMulInteger(OpRun):
        op_domain = ""

        def _run(self, a: Any, b: Any, a_zero_point: Any = None, b_zero_point: Any = None) -> tuple[Any]:
            if b_zero_point is not None and np.any(b_zero_point):
                raise ValueError("weights with a zero point: not the symmetric int8 this emulates")
            zp = 0 if a_zero_point is None else int(a_zero_point)
            rows = a.reshape(-1, a.shape[-1]).astype(np.int64)
            w = b.astype(np.int64)
            if not avx2:
                out = (rows - zp) @ w
            else:  # raw u8 x s8 products, adjacent pairs summed and clipped to int16, then the zero point
                if rows.shape[1] % 2:
                    rows, w = np.pad(rows, ((0, 0), (0, 1))), np.pad(w, ((0, 1), (0, 0)))
                out = np.zeros((rows.shape[0], w.shape[1]), dtype=np.int64)
                for k in range(0, rows.shape[1], 64):
                    pair = (rows[:, k:k + 64:2, None] * w[None, k:k + 64:2]
                            + rows[:, k + 1:k + 64:2, None] * w[None, k + 1:k + 64:2])
                    kept = np.clip(pair, *INT16)
                    clipped[0] += int((kept != pair).sum())
                    clipped[1] += pair.size
                    out += kept.sum(axis=1)
                out -= zp * w.sum(axis=0)[None, :]
            return (out.reshape(*a.shape[:-1], b.shape[1]).astype(np.int32),)

    class DequantizeLinear(OpRun):  # the reference evaluator has no opset-17 one
        op_domain = ""

        def _run(self, x: Any, scale: Any, zero_point: Any = None, axis: Any = None, **_: Any) -> tuple[Any]:
            zp = np.zeros_like(scale) if zero_point is None else zero_point.astype(np.float32)
            if np.ndim(scale) == 1 and x.ndim > 1:
                shape = [1] * x.ndim
                shape[1 if axis is None else axis] = -1
                scale, zp = scale.reshape(shape), zp.reshape(shape)
            return ((x.astype(np.float32) - zp) * scale).astype(np.float32),

    evaluator = ReferenceEvaluator(onnx.load(str(onnx_file)), new_ops=[MatMulInteger, DequantizeLinear])

    class Session:
        def run(self, _: Any, feeds: dict[str, Any]) -> Any:
            return evaluator.run(None, feeds)

    return Session()


def unoptimized_session(onnx_file: Path) -> Any:
    """onnxruntime without graph fusions: other float rounding in the same arithmetic."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.intra_op_num_threads = 1
    return ort.InferenceSession(str(onnx_file), sess_options=opts, providers=["CPUExecutionProvider"])


def embed_with(emb: Any, texts: list[str], session: Any) -> np.ndarray:
    """Vectors as the embedder makes them (tokenizer, pooling, norm), through another session."""
    emb._load()
    return np.vstack([emb._embed_batch([e], session) for e in emb._tokenizer.encode_batch(texts)])


def weight_range(onnx_file: Path) -> tuple[int, int]:
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(onnx_file))
    ws = [numpy_helper.to_array(t) for t in model.graph.initializer if t.data_type == onnx.TensorProto.INT8]
    return int(min(w.min() for w in ws)), int(max(w.max() for w in ws))


def models(work: Path) -> dict[str, Any]:
    """The built-in embedder with the old model's weights (built here once) and with the shipped ones."""
    from deploy.make_embedder import export_fp32, quantize
    from retrieval.embedders import load_embedder
    from retrieval.embedders.base import packaged_model_dir

    old = work / "full-range.onnx"
    if not old.exists():
        work.mkdir(parents=True, exist_ok=True)
        fp32 = work / "fp32.onnx"
        export_fp32(packaged_model_dir(), fp32)
        quantize(fp32, old, reduce_range=False)
    before = load_embedder("onnx:minilm-l6-int8")
    before.onnx_file = old  # same model id; its hash is the file's, as indexes built before this change record
    return {"full range (before)": before, "reduce_range (shipped)": load_embedder("onnx:minilm-l6-int8")}


def vectors_table(embs: dict[str, Any], texts: list[str]) -> list[str]:
    rows = ["| model | int8 weights | pairs clipped (AVX2) | cosine AVX2 vs exact, min / median | "
            "onnxruntime here vs exact, min / median | onnxruntime, graph optimizations off vs on, min / median |",
            "|---|---|---|---|---|---|"]
    for name, emb in embs.items():
        clipped = [0, 0]
        exact = embed_with(emb, texts, reference_session(emb.onnx_file, avx2=False, clipped=clipped))
        avx2 = embed_with(emb, texts, reference_session(emb.onnx_file, avx2=True, clipped=clipped))
        here = emb.encode(texts)
        unfused = embed_with(emb, texts, unoptimized_session(emb.onnx_file))
        cos, cos_here, cos_opt = (exact * avx2).sum(1), (exact * here).sum(1), (unfused * here).sum(1)
        lo, hi = weight_range(emb.onnx_file)
        rows.append(f"| {name} | [{lo}, {hi}] | {clipped[0]:,} of {clipped[1]:,} | {cos.min():.4f} / "
                    f"{np.median(cos):.4f} | {cos_here.min():.4f} / {np.median(cos_here):.4f} | "
                    f"{cos_opt.min():.4f} / {np.median(cos_opt):.4f} |")
    return rows


def retrieval_rows(embs: dict[str, Any], data: Path, work: Path) -> list[str]:
    from bench.suite.retrieval_eval import build, evaluate, shipped, split_paths
    from retrieval.versions import IndexStore

    recipe, query = shipped()
    rows = ["| model | queries embedded | " + " | ".join(f"{s} hit@1 / hit@5 / MRR" for s in SPLITS) + " |",
            "|---|---|" + "---|" * len(SPLITS)]
    for i, (name, emb) in enumerate(embs.items()):
        cells: dict[str, list[str]] = {label: [] for label in QUERY_SIDES}
        for split in SPLITS:
            pdfs, qs = split_paths(split)
            where = data / split if i == 0 else work / "shipped" / split
            store = IndexStore(where) if (where / "ACTIVE").exists() else build(pdfs, recipe, emb, where)
            texts = [q["question"] for q in qs]
            sides = (emb.encode(texts),
                     embed_with(emb, texts, reference_session(emb.onnx_file, avx2=False, clipped=[0, 0])),
                     embed_with(emb, texts, reference_session(emb.onnx_file, avx2=True, clipped=[0, 0])))
            for label, vecs in zip(QUERY_SIDES, sides, strict=True):
                s, _ = evaluate(store, emb, qs, query, {q["id"]: v for q, v in zip(qs, vecs, strict=True)})
                cells[label].append(f"{s.hit1:.3f} / {s.hit5:.3f} / {s.mrr:.3f}")
                print(json.dumps({"model": name, "split": split, "queries": label, "hit1": s.hit1,
                                  "hit5": s.hit5, "mrr": s.mrr}), flush=True)
        rows += [f"| {name} | {label} | " + " | ".join(c) + " |" for label, c in cells.items()]
    return rows


def cost_rows(embs: dict[str, Any], rounds: int = 3) -> list[str]:
    from bench.suite.retrieval_eval import passages, split_paths

    pdfs, qs = split_paths("dev")
    texts, questions = passages(pdfs)[:200], [q["question"] for q in qs]
    pps: dict[str, list[float]] = {n: [] for n in embs}
    qms: dict[str, list[float]] = {n: [] for n in embs}
    for _ in range(rounds):  # interleaved, so both see the same machine
        for name, emb in embs.items():
            t = time.perf_counter()
            emb.encode(texts)
            pps[name].append(len(texts) / (time.perf_counter() - t))
            for q in questions:
                t = time.perf_counter()
                emb.encode_query(q)
                qms[name].append((time.perf_counter() - t) * 1000)
    rows = ["| model | passages/s (ingest's way) | query ms p50 |", "|---|---|---|"]
    rows += [f"| {n} | {statistics.median(pps[n]):.1f} | {statistics.median(qms[n]):.2f} |" for n in embs]
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", type=Path, required=True, help="halves built with the old (full-range) model")
    p.add_argument("--work", type=Path, default=Path("/tmp/int8p"))
    p.add_argument("--write", action="store_true", help="write docs/bench/experiments/int8_portability.md")
    args = p.parse_args(argv)
    embs = models(args.work)
    qs = [json.loads(line) for line in (Path("eval/dev/questions.jsonl")).read_text().splitlines()][:12]
    texts = [q["question"] for q in qs] + [q.get("evidence") or q["answer"] for q in qs]
    parts = ["## The built-in int8 embedder on CPUs with and without VNNI (bench/experiments/int8_portability.py)",
             "", "Vectors of 24 texts (12 eval/dev questions and their evidence), the AVX2 kernel emulated:", "",
             *vectors_table(embs, texts), "",
             "Retrieval, shipped search, each half's index built here with that model; the questions "
             "embedded here or by the emulated AVX2 kernel:", "", *retrieval_rows(embs, args.data, args.work), "",
             "Cost on this machine, interleaved rounds (200 eval/dev passages, 104 questions one at a time):", "",
             *cost_rows(embs), "", VERDICT]
    text = "\n".join(parts)
    print(text)
    if args.write:
        write_section(__spec__.name, text, argv=sys.argv[1:] if argv is None else argv)
    return 0


VERDICT = """\
Verdict: the full-range weights are CPU-dependent and the 7-bit ones are not, for the part that the
CPU's integer kernel decides. With the AVX2 kernel every text's vector moved (median cosine 0.9924 to the
exact one, 42,955 pairs clipped on 24 texts); with `reduce_range` no pair can clip (the bound is
checked on the shipped weights by tests/test_embedder_portability.py) and the emulated AVX2 vectors
equal the exact ones. Embedding only the questions on the AVX2 kernel moved one or two questions per
half on the old model (eval/dev3 hit@5 +1, eval/test hit@1 +1 and hit@5 -1); a whole index built on an
AVX2 machine moves its passages too (eval/test hit@1 0.753 there against 0.727 here, at an earlier
commit, docs/bench/answer_eval.md). Ships: 7-bit weights, same speed (the same kernels run), retrieval on
the four halves within one question of the full-range model at hit@1 (dev3 +1, dev2 and test -1).

What stays: the activations are rounded to 8 bits at run time, so a tiny difference in the float
parts (layer norm, softmax, GELU) can move a value across a rounding step. onnxruntime with and without
its graph fusions, on this one CPU, gives such differences for a few texts (cosine min 0.9966, median
1.0000), and so may another CPU's float kernels: not removed here. A float32 model would remove them at
0.42x the passages per second on this machine (42.6 against 101.0 passages/s, query 3.5 against 2.5 ms
p50, a scratch run of the same export without quantization): not taken."""

if __name__ == "__main__":
    sys.exit(main())
