"""One profile's benchmark run, in its own process: `python -m gateway.qa.bench_worker --profile P ...`.

A fresh process per run is what makes the cold start honest (nothing is warm from the previous
profile) and the peak RSS one profile's own. The child opens the same data directory as the
parent (index read-only), loads embedder and runtime, answers the questions at temperature 0
through the one answer pipeline (client "bench"), and prints one JSON object on stdout. Anything
else that writes to stdout (native libraries) is redirected to stderr so the JSON stays clean.

Answer rows go to a throwaway answer log (--log-db, deleted by the parent), never the user's.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:  # the worker imports the gateway once it runs (its start-up is measured)
    from gateway.qa.metrics import Answered, Item, Question

# Linux CLOCK_MONOTONIC is system-wide, so the parent's spawn time and ours share one clock.
T_MAIN = time.monotonic()


def _ms(start: float, end: float | None = None) -> float:
    return round(((end if end is not None else time.monotonic()) - start) * 1000, 3)


def peak_rss_mb(runtime: Any = None) -> float:
    """This process's peak RSS, plus its runtime's worker process's (where the model lives) if any:
    the sum of the two peaks, an upper bound of what they held together."""
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    mb = kb / 1024 if sys.platform != "darwin" else kb / 1024 / 1024
    pid = getattr(runtime, "pid", None)
    if pid:
        from runtimes.worker_protocol import peak_rss_bytes

        mb += (peak_rss_bytes(pid) or 0) / (1024 * 1024)
    return round(mb, 1)


def sustained_decode_tps(answers: list[dict[str, Any]]) -> float | None:
    """Tokens after the first over the seconds spent decoding them, across all answers of the run."""
    tokens = seconds = 0.0
    for a in answers:
        n, tps = a.get("output_tokens") or 0, a.get("decode_tps")
        if n > 1 and tps:
            tokens += n - 1
            seconds += (n - 1) / tps
    return round(tokens / seconds, 3) if seconds > 0 else None


def _median(values: list[float]) -> float | None:
    import statistics

    vals = [v for v in values if v is not None]
    return round(statistics.median(vals), 3) if vals else None


def _item(position: int, q: Question, r: Answered) -> Item:
    """The shape gateway.qa.metrics.compute_metrics reads (as replay stores it)."""
    return {"position": position, "question": q, "result": r,
            "citations": [{"manual": c.get("manual"), "page": c.get("page")} for c in r.get("citations") or []],
            "retrieved": [{"manual": p.get("manual"), "page": p.get("page")} for p in r.get("passages") or []]}


def run(args: argparse.Namespace) -> dict[str, Any]:
    from gateway.answer.pipeline import answer
    from gateway.answer.request import AnswerRequest
    from gateway.config import load_settings
    from gateway.qa.metrics import compute_metrics
    from gateway.qa.replay import load_questions
    from gateway.records.answers import AnswerLog
    from gateway.services import Services
    from runtimes.profiles import load_profile

    t_imports = time.monotonic()
    settings = load_settings(args.config)
    settings.data_dir = Path(args.data)
    settings.runtime.profile = args.profile
    profile = load_profile(args.profile)
    declared_temperature = profile.generation.get("temperature", 0.0)
    profile.generation["temperature"] = 0.0  # the same condition for every profile
    # this exact (temperature-0) profile object; answers logged where the bench says
    gw = Services(settings, profile=profile, log=AnswerLog(args.log_db) if args.log_db else None)
    qs = load_questions(args.questions).questions[: args.limit or None]

    t0 = time.monotonic()
    gw.store.open()  # active version: manifest, chunk store, FAISS
    t1 = time.monotonic()
    gw.embedder.encode(["warm-up"])  # torch + sentence-transformers loaded
    t2 = time.monotonic()
    runtime = gw.runtime  # artifact loaded on its backend
    t3 = time.monotonic()
    chain = runtime.describe().to_dict()
    startup = {"interpreter_and_imports_ms": _ms(args.spawned_at, t_imports) if args.spawned_at else None,
               "index_open_ms": _ms(t0, t1), "embedder_ms": _ms(t1, t2), "runtime_load_ms": _ms(t2, t3)}
    cold_start_ms = _ms(args.spawned_at, t3) if args.spawned_at else _ms(T_MAIN, t3)

    answers: list[dict[str, Any]] = []
    items: list[Item] = []
    for i, q in enumerate(qs):
        r: Answered
        try:
            request = AnswerRequest(question=q["question"], client="bench", mode="generate",
                                    max_tokens=args.max_tokens or None)
            r = cast("Answered", answer(gw.answer_deps(), request).to_dict())  # the answer's JSON, as replay's
        except Exception as exc:  # one failing question is recorded; the run goes on
            r = {"outcome": "error", "error": f"{type(exc).__name__}: {exc}", "answer": "",
                 "citations": [], "passages": [], "timings": {}}
        items.append(_item(i, q, r))
        t = r.get("timings") or {}
        answers.append({
            "id": q["id"], "outcome": r.get("outcome"), "mode": r.get("mode"), "error": r.get("error"),
            "ttft_ms": t.get("ttft_ms"), "runtime_ttft_ms": t.get("runtime_ttft_ms"),
            "decode_tps": t.get("decode_tps"), "output_tokens": t.get("output_tokens"),
            "prompt_tokens": t.get("prompt_tokens"), "total_ms": t.get("total_ms"),
            "stop_reason": t.get("stop_reason"),
            "max_tokens": (r.get("generation_config") or {}).get("max_tokens"),
            "chain_id": r.get("chain_id"), "answer": r.get("answer", ""),
            "citations": [f"{c.get('manual')} p.{c.get('page')}" for c in r.get("citations") or []],
        })
    metrics = compute_metrics(items, embed=gw.embedder.encode)
    generated = [a for a in answers if a["ttft_ms"] is not None and a["mode"] == "generate"]
    options = getattr(runtime, "options", {}) or {}
    return {
        "ok": True, "pid": os.getpid(), "profile": profile.name, "profile_path": str(profile.path),
        "backend": profile.backend, "declared_temperature": declared_temperature,
        "threads": getattr(runtime, "n_threads", None) or options.get("n_threads"),
        "context_length": runtime.context_length,
        "output_limit": args.max_tokens or None,
        "index_version": gw.store.active_id(),
        "chain_id": chain["chain_id"], "chain": chain,
        "cold_start_ms": cold_start_ms, "startup": startup,
        "questions": len(qs), "generated": len(generated),
        "ttft_ms_median": _median([a["ttft_ms"] for a in generated]),
        "runtime_ttft_ms_median": _median([a["runtime_ttft_ms"] for a in generated]),
        "total_ms_median": _median([a["total_ms"] for a in answers]),
        "decode_tps": sustained_decode_tps(generated),
        "output_tokens": sum(a["output_tokens"] or 0 for a in generated),
        "peak_rss_mb": peak_rss_mb(runtime),
        "metrics": metrics,
        "answers": answers,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gateway.qa.bench_worker", description=__doc__)
    parser.add_argument("--profile", required=True)
    parser.add_argument("--questions", required=True)
    parser.add_argument("--data", required=True, help="data directory holding the index (read only)")
    parser.add_argument("--config", default=None)
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--max-tokens", type=int, default=0)
    parser.add_argument("--log-db", default="", help="answer log for the bench rows (a throwaway file)")
    parser.add_argument("--spawned-at", type=float, default=0.0, help="parent's time.monotonic() at spawn")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # native libraries that print to stdout must not corrupt the JSON
    sys.stdout = sys.stderr
    try:
        result = run(args)
        code = 0
    except Exception as exc:  # noqa: BLE001 - reported to the parent as data, with the traceback on stderr
        traceback.print_exc()
        result = {"ok": False, "error": f"{type(exc).__name__}: {exc}", "pid": os.getpid(),
                  "peak_rss_mb": peak_rss_mb()}
        code = 2
    out.write(json.dumps(result, default=str) + "\n")
    out.flush()
    return code


if __name__ == "__main__":
    sys.exit(main())
