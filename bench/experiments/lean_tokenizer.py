"""The lean Unigram tokenizer (retrieval.embedders.unigram) against `tokenizers` on multilingual-e5's tokenizer.json.

(a) identity: every text line and every page of the development manuals (pypdf page text of eval/zh-dev,
zh-dev2, de-dev, de-dev2, dev), as extracted and as the embedder prepares a passage ("passage: " + NFKC +
strip): the fraction with the same ids, and any difference; (b) resident memory of fresh processes: the
tokenizer alone, and the whole e5 companion (OnnxEmbedder: ONNX session + tokenizer) after embedding a few
texts and a question, lean and `tokenizers` side by side, and the gateway as dual_dense.md measures the
companion's cost (zh-dev2's index, three searches); (c) tokenization speed on the same texts, one run
each, fresh tokenizers (cold caches).

    python -m bench.experiments.lean_tokenizer --e5 /work/instruments/e5_onnx/int8

writes docs/bench/experiments/lean_tokenizer.md. The -test halves are not read.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
import unicodedata
from pathlib import Path
from typing import Any

HALVES = ("zh-dev", "zh-dev2", "de-dev", "de-dev2", "dev")
FEW = ["驱动器的输入电压范围为12V至24V，请勿超过24V。",
       "Die Lüftungsschlitze dürfen nie abgedeckt werden, sonst überhitzt das Gerät.",
       "Tighten the M8 mounting bolts to 25 N·m in a cross pattern.",
       "维护计划：" + "检查皮带张力，清洁风扇滤网，检查电缆是否损坏，并记录运行小时数。" * 40]


def texts_of(half: str) -> tuple[list[str], list[str]]:
    """A half's text lines (non-empty) and whole pages, as pypdf extracts them."""
    from pypdf import PdfReader

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # its warnings on broken PDF dictionaries

    from bench.harness import REPO

    lines: list[str] = []
    pages: list[str] = []
    for pdf in sorted((REPO / "eval" / half / "manuals").glob("*.pdf")):
        for page in PdfReader(pdf).pages:
            text = page.extract_text() or ""
            pages.append(text)
            lines += [line for line in text.splitlines() if line.strip()]
    return lines, pages


def prepared(text: str) -> str:
    return "passage: " + unicodedata.normalize("NFKC", text).strip()  # as retrieval.embedders.onnx


def child(mode: str, e5: Path) -> dict[str, float]:
    """Run in a fresh process: load one way, use it, and report this process's memory (MiB)."""
    import retrieval.embedders.onnx as onnx
    from bench.harness import proc_mib

    if mode.startswith("gateway-"):  # dual_dense's own memory child, with the tokenizer of this side
        from bench.experiments.dual_dense import rss_child

        side, data = mode.split(":", 1)
        if side == "gateway-dual-tokenizers":
            from tokenizers import Tokenizer

            onnx._read_tokenizer = lambda path: Tokenizer.from_file(str(path))  # type: ignore[assignment]
        got = rss_child("plain" if side == "gateway-plain" else "dual", data, str(e5))
        return {"before": got["rss_before_mib"], "rss": got["rss_mib"], "peak": got["hwm_mib"]}
    from retrieval.embedders.unigram import UnigramTokenizer

    if mode == "tokenizers" or mode == "companion-tokenizers":
        from tokenizers import Tokenizer
    before = proc_mib(os.getpid())["VmRSS"]  # after the imports
    if mode == "lean":
        tok: Any = UnigramTokenizer.from_file(e5 / "tokenizer.json")
        tok.encode_batch([prepared(t) for t in FEW])
    elif mode == "tokenizers":
        tok = Tokenizer.from_file(str(e5 / "tokenizer.json"))
        tok.encode_batch([prepared(t) for t in FEW])
    else:
        if mode == "companion-tokenizers":  # the embedder as before this change
            onnx._read_tokenizer = lambda path: Tokenizer.from_file(str(path))  # type: ignore[assignment]
        emb = onnx.OnnxEmbedder(f"onnx:{e5}")
        emb.encode(FEW)
        emb.encode_query("驱动器的输入电压是多少？")
        assert isinstance(emb._tokenizer, UnigramTokenizer) == (mode == "companion-lean")
    now = proc_mib(os.getpid())
    return {"before": before, "rss": now["VmRSS"], "peak": now["VmHWM"]}


def memory(e5: Path) -> dict[str, dict[str, float]]:
    out = {}
    for mode in ("lean", "tokenizers", "companion-lean", "companion-tokenizers"):
        done = subprocess.run([sys.executable, "-m", "bench.experiments.lean_tokenizer", "--child", mode,
                               "--e5", str(e5)], capture_output=True, text=True, check=True)
        out[mode] = json.loads(done.stdout.strip().splitlines()[-1])
        print(mode, out[mode], file=sys.stderr, flush=True)
    return out


def gateway_memory(e5: Path) -> dict[str, dict[str, float]]:
    """As docs/bench/experiments/dual_dense.md measures the companion's cost: zh-dev2 ingested with e5 beside,
    then a fresh process opening that index and answering three searches (bench.experiments.dual_dense.rss_child)."""
    from bench.experiments.dual_dense import half_pdfs, ingest
    from retrieval.embedders.factory import load_embedder

    out = {}
    with tempfile.TemporaryDirectory(prefix="lean-tok-") as tmp:
        gw, _ = ingest(Path(tmp) / "dual", half_pdfs("zh-dev2"), load_embedder(companion=str(e5)))
        gw.log.close()
        for side in ("gateway-plain", "gateway-dual-lean", "gateway-dual-tokenizers"):
            done = subprocess.run([sys.executable, "-m", "bench.experiments.lean_tokenizer", "--child",
                                   f"{side}:{gw.settings.data_dir}", "--e5", str(e5)], capture_output=True, text=True,
                                  check=True)
            out[side] = json.loads(done.stdout.strip().splitlines()[-1])
            print(side, out[side], file=sys.stderr, flush=True)
    return out


def identity_and_speed(e5: Path) -> dict[str, Any]:
    from tokenizers import Tokenizer

    from retrieval.embedders.unigram import UnigramTokenizer

    report: dict[str, Any] = {"halves": {}, "differences": []}
    lines_all: list[str] = []
    pages_all: list[str] = []
    lean, ref = UnigramTokenizer.from_file(e5 / "tokenizer.json"), Tokenizer.from_file(str(e5 / "tokenizer.json"))
    lean.no_padding()
    ref.no_padding()
    for half in HALVES:
        lines, pages = texts_of(half)
        row = {}
        for kind, texts in (("lines", lines), ("pages", pages)):
            for form, batch in (("raw", texts), ("passage", [prepared(t) for t in texts])):
                got, want = [e.ids for e in lean.encode_batch(batch)], [e.ids for e in ref.encode_batch(batch)]
                same = sum(a == b for a, b in zip(got, want, strict=True))
                row[f"{kind} {form}"] = [same, len(batch)]
                report["differences"] += [{"half": half, "text": t[:200], "lean": a[:40], "tokenizers": b[:40]}
                                          for t, a, b in zip(batch, got, want, strict=True) if a != b][:5]
                if form == "passage":
                    (lines_all if kind == "lines" else pages_all).extend(batch)
        report["halves"][half] = row
        print(half, row, file=sys.stderr, flush=True)
    del lean, ref
    report["speed"] = {}
    for kind, texts in (("lines", lines_all), ("pages", pages_all)):
        timings: dict[str, Any] = {"texts": len(texts), "chars": sum(map(len, texts))}
        for name in ("lean", "tokenizers", "tokenizers, one at a time"):  # fresh ones: cold caches
            tok: Any = (UnigramTokenizer.from_file(e5 / "tokenizer.json") if name == "lean"
                        else Tokenizer.from_file(str(e5 / "tokenizer.json")))
            tok.no_padding()
            t0, c0 = time.perf_counter(), time.process_time()
            ids = tok.encode_batch(texts) if name != "tokenizers, one at a time" else [tok.encode(t) for t in texts]
            timings[name] = {"wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0,
                             "tokens": sum(len(e.ids) for e in ids)}
        report["speed"][kind] = timings
    print(report["speed"], file=sys.stderr, flush=True)
    return report


def write(report: dict[str, Any], argv: list[str]) -> Path:
    from bench.harness import write_section

    kinds = ["lines raw", "lines passage", "pages raw", "pages passage"]
    rows = "\n".join(f"| {h} | " + " | ".join(f"{r[k][0]} / {r[k][1]}" for k in kinds) + " |"
                     for h, r in report["halves"].items())
    same = sum(r[k][0] for r in report["halves"].values() for k in kinds)
    total = sum(r[k][1] for r in report["halves"].values() for k in kinds)
    diffs = "\n".join(f"- {d['half']}: {d['text']!r}: lean {d['lean']}, tokenizers {d['tokenizers']}"
                      for d in report["differences"]) or "None."
    m = report["memory"]
    mem_rows = "\n".join(f"| {mode} | {v['before']:.0f} | {v['rss']:.0f} | {v['peak']:.0f} |" for mode, v in m.items())
    g = report["gateway"]
    gw_rows = "\n".join(f"| {mode} | {v['before']:.0f} | {v['rss']:.0f} | {v['peak']:.0f} |" for mode, v in g.items())
    speed_rows = "\n".join(f"| {kind} ({v['texts']} texts, {v['chars']:,} characters) | {name} | {t['wall_s']:.2f} | "
                           f"{t['cpu_s']:.2f} | {t['tokens']} |"
                           for kind, v in report["speed"].items() for name, t in v.items() if isinstance(t, dict))
    ratios = "; ".join(f"{kind}: {v['lean']['cpu_s'] / v['tokenizers']['cpu_s']:.1f}x the CPU time of encode_batch, "
                       f"{v['lean']['cpu_s'] / v['tokenizers, one at a time']['cpu_s']:.1f}x of one at a time"
                       for kind, v in report["speed"].items())
    text = (
        "# A lean tokenizer for the multilingual-e5 companion (issue 47)\n\n"
        "retrieval.embedders.unigram reads multilingual-e5-small's tokenizer.json (XLM-R's 250,002 Unigram pieces) "
        "as one dict piece -> id and a float array of scores; retrieval.embedders.onnx uses it for any "
        "tokenizer.json it reads whole and `tokenizers` for the rest (the built-in MiniLM's WordPiece).\n\n"
        "## (a) Same ids as `tokenizers`\n\n"
        "pypdf page text of the development manuals: every non-empty line and every page, as extracted (raw) "
        "and as the embedder prepares a passage (\"passage: \" + NFKC + strip). Texts with identical ids / texts:\n\n"
        "| manuals | lines raw | lines passage | pages raw | pages passage |\n|---|---|---|---|---|\n"
        f"{rows}\n\nIn all {same} of {total} texts ({100 * same / total:.2f}%) have identical ids. "
        f"Differences:\n\n{diffs}\n\n"
        "## (b) Resident memory (MiB), fresh processes one after another\n\n"
        "Tokenizer alone: import, load tokenizer.json, encode 4 texts. Companion: retrieval.embedders.onnx."
        "OnnxEmbedder on the converted e5 int8 directory (ONNX session + tokenizer), 4 passages embedded (one of "
        "~1,000 tokens, in windows) and one question; `tokenizers` by replacing onnx._read_tokenizer as it "
        "was before. before = RSS after importing retrieval.embedders.onnx (numpy) and the tokenizer's module, "
        "before loading anything; peak = VmHWM (parsing the 17 MB JSON is most of the lean peak).\n\n"
        "| process | before | RSS | peak |\n|---|---|---|---|\n" + mem_rows + "\n\n"
        f"Tokenizer alone: lean +{m['lean']['rss'] - m['lean']['before']:.0f} MiB, `tokenizers` "
        f"+{m['tokenizers']['rss'] - m['tokenizers']['before']:.0f} MiB; the whole companion process "
        f"{m['companion-lean']['rss']:.0f} MiB lean against {m['companion-tokenizers']['rss']:.0f} MiB "
        f"({m['companion-lean']['rss'] - m['companion-tokenizers']['rss']:+.0f} MiB).\n\n"
        "The gateway as dual_dense.md measures the companion's cost (a fresh process opening the zh-dev2 index, "
        "ingested with e5 beside, and answering three searches: bench.experiments.dual_dense.rss_child):\n\n"
        "| process | before | RSS | peak |\n|---|---|---|---|\n" + gw_rows + "\n\n"
        f"e5 beside costs +{g['gateway-dual-lean']['rss'] - g['gateway-plain']['rss']:.0f} MiB with the lean "
        f"tokenizer, +{g['gateway-dual-tokenizers']['rss'] - g['gateway-plain']['rss']:.0f} MiB with `tokenizers`.\n\n"
        "## (c) Tokenization speed, one run each, the same texts\n\n"
        "The passage texts of (a), lines and pages separately, each tokenizer fresh (cold caches: both keep a "
        "cache of words); `tokenizers`' encode_batch may use both cores, hence also its one-at-a-time row. "
        "2 cores shared with other jobs: compare within this table only (CPU seconds are the steadier).\n\n"
        "| texts | tokenizer | wall s | CPU s | tokens |\n|---|---|---|---|---|\n" + speed_rows + "\n\n"
        f"Lean / `tokenizers`: {ratios}.\n")
    return write_section("bench.experiments.lean_tokenizer", text, argv=argv)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--e5", type=Path, required=True, help="the converted e5 ONNX directory (tokenizer.json)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--json", type=Path, help="also write the figures as JSON here")
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.e5)))
        return 0
    report = identity_and_speed(args.e5)
    report["memory"] = memory(args.e5)
    report["gateway"] = gateway_memory(args.e5)
    if args.json:
        args.json.write_text(json.dumps(report, ensure_ascii=False, indent=1), encoding="utf-8")
    print(write(report, argv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
