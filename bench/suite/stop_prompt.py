"""A Stop while the model reads a long prompt: what the next question waits for, before and after the abort.

Issue 50 item 2. Two supervised llama.cpp runtimes load the same GGUF in one process:
- "abort callback" is the product (runtimes.llamacpp): a Stop reaches llama.cpp through
  llama_set_abort_callback and the prompt's computation ends inside the same worker;
- "kill and reload" is the previous behaviour, kept here as a bench-only backend
  (:class:`KillAndReload`: no abort callback, so the supervisor waits its 0.25 s prefill grace,
  kills the worker and starts a fresh one, which loads the model again).
Each round, on each side in turn: a ~1,500-token prompt starts, the Stop comes 2 s later (well
inside the prompt on a CPU), and a short question is asked at once. Timed: Stop -> the stopped
stream has returned, and Stop -> the next question's first token. Then a plain answer on each side
gives decode tokens/s on both sides (the callback is unset while decoding: the ratio checks it costs nothing).

    python -m bench.suite.stop_prompt [--model PATH] [--rounds 3]   # docs/bench/stop_prompt.md

The default model is the 1.5B measurement instrument (Qwen2.5-Coder-1.5B-Instruct Q4_K_M, assembled
by `python -m train.instruments qwen1.5b --out $MANUALQA_INSTRUMENTS`; never a dependency); without
it the built-in SmolLM2-135M is measured and the section says so.
"""

from __future__ import annotations

import argparse
import os
import statistics
import threading
import time
from pathlib import Path
from typing import Any

from bench.harness import write_section
from runtimes.llamacpp.runtime import LlamaCppRuntime

INSTRUMENT = Path(os.environ.get("MANUALQA_INSTRUMENTS", "/work/instruments")) / \
    "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
SIDES = {"abort callback": "llamacpp", "kill and reload": "bench.suite.stop_prompt:KillAndReload"}
STOP_AFTER_S = 2.0


class KillAndReload(LlamaCppRuntime):
    """llama.cpp as it ran before the abort callback (bench only): a Stop during the prompt is not heard."""

    aborts_prompt = False

    def _install_abort(self, llm: Any, lib: Any) -> None:
        return None


def long_prompt() -> list[dict[str, str]]:
    lines = [f"Step {i}: torque bolt {i} of the pump housing to {20 + i % 30} Nm, then check seal {i % 7} "
             f"for leaks at {2 + i % 5} bar." for i in range(45)]
    return [{"role": "system", "content": "Answer from the passages only."},
            {"role": "user", "content": "\n".join(lines) + "\nWhich bolts take more than 45 Nm?"}]


def next_question(round_no: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"Question {round_no}: what does a pressure relief valve do?"}]


def stop_round(rt: Any, round_no: int) -> dict[str, Any]:
    from runtimes.base import GenerationConfig, GenerationStats

    cancel = threading.Event()
    pid = rt.pid
    crashes = len(rt.health()["recent_crashes"])
    stats: list[GenerationStats] = []

    def read_long() -> None:
        for item in rt.stream(long_prompt(), GenerationConfig(max_tokens=64, timeout_s=600), cancel):
            if isinstance(item, GenerationStats):
                stats.append(item)

    reader = threading.Thread(target=read_long)
    reader.start()
    time.sleep(STOP_AFTER_S)
    stopped_at = time.perf_counter()
    cancel.set()
    reader.join()
    returned = time.perf_counter() - stopped_at
    first = None
    for item in rt.stream(next_question(round_no), GenerationConfig(max_tokens=8, timeout_s=600)):
        if isinstance(item, str) and first is None:
            first = time.perf_counter() - stopped_at
    return {"returned_s": returned, "next_first_token_s": first,
            "stop_reason": stats[-1].stop_reason if stats else None,
            "output_tokens": stats[-1].output_tokens if stats else None,
            "same_worker": rt.pid == pid and pid is not None,
            "crashes_added": len(rt.health()["recent_crashes"]) - crashes}


def decode_tps(rt: Any) -> float | None:
    from runtimes.base import GenerationConfig, GenerationStats

    for item in rt.stream(next_question(-1), GenerationConfig(max_tokens=48, timeout_s=600)):
        if isinstance(item, GenerationStats):
            return item.decode_tps
    return None


def main() -> int:
    from runtimes.registry import create_runtime

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=None)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    assembled = INSTRUMENT.with_name(INSTRUMENT.name + ".PROVENANCE.json").is_file()  # written last
    model = args.model or (INSTRUMENT if assembled else None)
    artifact = str(model) if model else "default"
    label = model.name if model else "SmolLM2-135M-Instruct (built in; the 1.5B instrument was not assembled)"
    sides = {name: create_runtime(backend, artifact, {"n_ctx": 4096}) for name, backend in SIDES.items()}
    load_s = {}
    for name, rt in sides.items():
        t0 = time.perf_counter()
        rt.load()
        load_s[name] = time.perf_counter() - t0
    prompt_tokens = sides["abort callback"].count_tokens(long_prompt()[1]["content"])
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in sides}
    tps: dict[str, list[float]] = {name: [] for name in sides}
    for r in range(args.rounds):
        for name in (list(sides) if r % 2 == 0 else list(reversed(sides))):
            rows[name].append(stop_round(sides[name], r))
            got = decode_tps(sides[name])
            if got:
                tps[name].append(got)
    for rt in sides.values():
        rt.unload()

    def med(name: str, key: str) -> float:
        return statistics.median(float(x[key]) for x in rows[name] if x[key] is not None)

    lines = ["## A Stop while the prompt is read (bench/suite/stop_prompt.py)", "",
             f"{label}; a {prompt_tokens}-token prompt stopped {STOP_AFTER_S:g} s after it started, then a "
             f"short question asked at once; {args.rounds} rounds per side, alternating. Load time of the "
             f"model in a worker: {load_s['abort callback']:.1f} s.", "",
             "| | kill and reload (before) | abort callback (now) |", "|---|---|---|",
             f"| Stop -> stopped stream returned (median s) | {med('kill and reload', 'returned_s'):.2f} | "
             f"{med('abort callback', 'returned_s'):.2f} |",
             f"| Stop -> next question's first token (median s) | {med('kill and reload', 'next_first_token_s'):.2f}"
             f" | {med('abort callback', 'next_first_token_s'):.2f} |"]
    for key, title in (("same_worker", "rounds the same worker went on"), ("crashes_added", "crashes counted")):
        cells = [str(sum(int(x[key]) for x in rows[n])) + f" of {len(rows[n])}" if key == "same_worker"
                 else str(sum(int(x[key]) for x in rows[n])) for n in ("kill and reload", "abort callback")]
        lines.append(f"| {title} | {cells[0]} | {cells[1]} |")
    reasons = {n: sorted({str(x['stop_reason']) for x in rows[n]}) for n in sides}
    lines.append(f"| stop reason | {', '.join(reasons['kill and reload'])} | {', '.join(reasons['abort callback'])} |")
    if tps["abort callback"] and tps["kill and reload"]:
        a, b = statistics.median(tps["abort callback"]), statistics.median(tps["kill and reload"])
        lines.append(f"| decode tokens/s of a plain answer (median) | {b:.1f} | {a:.1f} (ratio {a / b:.3f}) |")
    lines += ["", "Reading: without the callback llama.cpp cannot be interrupted inside a prompt, so the "
              "supervisor kills the worker and the next question waits for a fresh worker to load the model; "
              "with it the prompt's computation ends within one graph node and the same worker answers next. "
              "The callback is set only while a prompt is read (decoding checks between tokens), so a "
              "plain answer's decode speed should be the same on both sides: the ratio says whether it is."]
    write_section(__spec__.name, "\n".join(lines), out=args.out, conditions=f"Load average at the end: "
                  f"{os.getloadavg()[0]:.2f}.")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
