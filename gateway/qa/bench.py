"""The same-conditions comparison of deployment profiles (`manualqa bench`).

Every profile runs in a fresh child process (gateway.qa.bench_worker) on the same index, question
set, output limit, temperature 0 and concurrency 1; repeats are interleaved (A, B, A, B, ...) so
that drift of the machine (heat, other load) falls on every profile alike. The recorded
conditions (device, CPU, cores, thermal and power readings) travel with the figures, and a note
says where two profiles' artifacts differ in quantization or tokenizer, so that the table is not
read as a pure runtime race.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gateway.errors import GatewayError
from gateway.qa.conditions import machine_conditions, max_temperature, thermal_readings
from gateway.qa.metrics import Question, names
from gateway.stamps import utcnow
from ingest.discover import sha256_file
from runtimes.profiles import Profile

# Figures summarised per profile over its runs: key in a run -> higher is better.
RUN_FIGURES = {"cold_start_ms": False, "ttft_ms_median": False, "runtime_ttft_ms_median": False,
               "decode_tps": True, "total_ms_median": False, "peak_rss_mb": False,
               "temp_before_c": False, "temp_after_c": False, "temp_delta_c": False}
QUALITY = names("quality")


class BenchError(GatewayError):
    """A benchmark that cannot start (no index, no usable question, bad profile)."""


# -- the plan and its runs --------------------------------------------------------------------
@dataclass
class BenchPlan:
    profiles: list[Profile]
    labels: list[str]  # unique per profile (the name, suffixed when two share one)
    questions_path: Path
    questions: list[Question]
    data_dir: Path
    repeat: int = 1
    output_limit: int = 256
    config_path: str | None = None
    timeout_s: float = 1800.0


def unique_labels(profiles: list[Profile]) -> list[str]:
    labels: list[str] = []
    for p in profiles:
        label, n = p.name, 2
        while label in labels:
            label, n = f"{p.name}#{n}", n + 1
        labels.append(label)
    return labels


def common_output_limit(profiles: list[Profile], cap: int, requested: int | None) -> int:
    """One output limit for all: the requested one, else the smallest any profile allows."""
    if requested:
        return max(1, min(requested, cap))
    return max(1, min([cap, *(int(p.generation_config().max_tokens) for p in profiles)]))


def run_child(plan: BenchPlan, profile: Profile, log_db: Path) -> dict[str, Any]:
    """Run one profile in a fresh process; its JSON, its own peak RSS (wait4) and wall time."""
    cmd = [sys.executable, "-m", "gateway.qa.bench_worker", "--profile", str(profile.path),
           "--questions", str(plan.questions_path.resolve()), "--data", str(plan.data_dir.resolve()),
           "--limit", str(len(plan.questions)), "--max-tokens", str(plan.output_limit),
           "--log-db", str(log_db)]
    if plan.config_path:
        cmd += ["--config", str(Path(plan.config_path).resolve())]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "MANUALQA_DATA": str(plan.data_dir.resolve())}
    env.pop("MANUALQA_RUNTIME__PROFILE", None)
    with tempfile.TemporaryFile() as err:
        spawned = time.monotonic()
        proc = subprocess.Popen([*cmd, "--spawned-at", repr(spawned)], stdout=subprocess.PIPE, stderr=err,
                                env=env, cwd=os.getcwd())
        killer = threading.Timer(plan.timeout_s, proc.kill)
        killer.start()
        try:
            out = proc.stdout.read() if proc.stdout else b""
            _, status, usage = os.wait4(proc.pid, 0)  # this child's own rusage, not all children's
        finally:
            killer.cancel()
        proc.returncode = code = os.waitstatus_to_exitcode(status)
        wall_ms = round((time.monotonic() - spawned) * 1000, 1)
        err.seek(0)
        stderr_tail = err.read().decode("utf-8", errors="replace")[-1500:]
    lines = [ln for ln in out.decode("utf-8", errors="replace").splitlines() if ln.strip()]
    try:
        result = json.loads(lines[-1]) if lines else {}
    except json.JSONDecodeError:
        result = {}
    if not result.get("ok"):
        why = result.get("error") or (f"killed after {plan.timeout_s:g} s" if code < 0 else f"exit {code}")
        result = {**result, "ok": False, "error": why, "stderr_tail": stderr_tail}
    result.update(exit_code=code, wall_ms=wall_ms,
                  peak_rss_mb_wait4=round(usage.ru_maxrss / 1024, 1) if sys.platform != "darwin" else None)
    return result


def run_bench(plan: BenchPlan, progress: Callable[[str], None] | None = None,
              runner: Callable[[BenchPlan, Profile, Path], dict[str, Any]] = run_child) -> dict[str, Any]:
    """Interleaved runs (repeat r: every profile in order), then per-profile medians and notes."""
    started = utcnow()
    conditions_before = machine_conditions()
    runs: list[dict[str, Any]] = []
    tmp = Path(tempfile.mkdtemp(prefix="manualqa-bench-"))
    try:
        for r in range(plan.repeat):
            for i, (profile, label) in enumerate(zip(plan.profiles, plan.labels, strict=True)):
                if progress:
                    progress(f"repeat {r + 1}/{plan.repeat}: {label}")
                before = thermal_readings()
                load_before = os.getloadavg()[0]
                res = runner(plan, profile, tmp / "bench-answers.db")
                after = thermal_readings()
                t0, t1 = max_temperature(before), max_temperature(after)
                res.update(label=label, repeat=r + 1, slot=i, order=len(runs),
                           thermal_before_c=before, thermal_after_c=after, temp_before_c=t0, temp_after_c=t1,
                           temp_delta_c=round(t1 - t0, 2) if t0 is not None and t1 is not None else None,
                           load_average_before=load_before)
                runs.append(res)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # bench answers never reach the user's answer log
    profiles = [summarise(p, label, [r for r in runs if r["label"] == label])
                for p, label in zip(plan.profiles, plan.labels, strict=True)]
    qtext = "\n".join(json.dumps(q, sort_keys=True) for q in plan.questions)
    conditions = {
        **conditions_before, "started": started,
        "prompt_set": {"file": str(plan.questions_path), "file_sha256": sha256_file(plan.questions_path),
                       "questions": len(plan.questions),
                       "questions_sha256": hashlib.sha256(qtext.encode()).hexdigest(),
                       "ids": [q["id"] for q in plan.questions]},
        "output_limit_tokens": plan.output_limit, "temperature": 0.0, "concurrency": 1,
        "repeat": plan.repeat, "data_dir": str(plan.data_dir),
        "context_length": {p["label"]: p["context_length"] for p in profiles},
        "threads": {p["label"]: p["threads"] for p in profiles},
        "index_version": sorted({str(r["index_version"]) for r in runs if r.get("index_version")}),
        "thermal_c_after": thermal_readings(), "load_average_after": list(os.getloadavg()),
    }
    return {"conditions": conditions,
            "order": [{"order": r["order"], "repeat": r["repeat"], "profile": r["label"], "ok": r["ok"]}
                      for r in runs],
            "profiles": profiles, "notes": artifact_notes(profiles) + condition_notes(profiles, runs),
            "failed_runs": sum(1 for r in runs if not r["ok"])}


def spread(values: list[object]) -> dict[str, float | int | None]:
    vals = [float(v) for v in values if isinstance(v, (int, float))]
    if not vals:
        return {"median": None, "min": None, "max": None, "n": 0}
    return {"median": round(statistics.median(vals), 3), "min": round(min(vals), 3),
            "max": round(max(vals), 3), "n": len(vals)}


def summarise(profile: Profile, label: str, runs: list[dict[str, Any]]) -> dict[str, Any]:
    ok = [r for r in runs if r["ok"]]
    first = ok[0] if ok else {}
    chain_ids = sorted({r["chain_id"] for r in ok})
    quality = {name: spread([r["metrics"].get(name) for r in ok]) for name in QUALITY}
    return {
        "label": label, "name": profile.name, "path": str(profile.path), "backend": profile.backend,
        "declared_quantization": profile.artifact.quantization or None,
        "declared_temperature": first.get("declared_temperature"),
        "threads": first.get("threads"), "context_length": first.get("context_length"),
        "output_limit": first.get("output_limit"),
        "chain_id": chain_ids[0] if len(chain_ids) == 1 else chain_ids, "chain": first.get("chain"),
        "runs_ok": len(ok), "runs_failed": len(runs) - len(ok),
        "errors": [r.get("error") for r in runs if not r["ok"]],
        "figures": {k: spread([r.get(k) for r in ok]) for k in RUN_FIGURES},
        "peak_rss_mb_wait4": spread([r.get("peak_rss_mb_wait4") for r in ok]),
        "quality": quality, "outcomes": _count(ok, "outcome"), "modes": _count(ok, "mode"),
        "stop_reasons": _count(ok, "stop_reason"),
        "runs": [{k: v for k, v in r.items() if k not in ("chain", "thermal_before_c", "thermal_after_c")}
                 for r in runs],
    }


def _count(runs: list[dict[str, Any]], key: str) -> dict[str, int]:
    """How often each value of an answer field occurred, over all answers of all runs."""
    return dict(Counter(str(a.get(key)) for r in runs for a in r.get("answers", [])))


# -- notes ------------------------------------------------------------------------------------
def quantization_of(p: dict[str, Any]) -> str | None:
    q = (p.get("chain") or {}).get("quantization")
    name = q.get("name") if isinstance(q, dict) else q
    return str(name) if name else p.get("declared_quantization")


def tokenizer_of(p: dict[str, Any]) -> tuple[str, str] | None:
    """(short description, fingerprint) of the chain's tokenizer and chat template, if it records one."""
    tok = (p.get("chain") or {}).get("tokenizer")
    if not tok:
        return None
    if not isinstance(tok, dict):
        return str(tok), str(tok)
    # Backends record their tokenizer differently (GGUF metadata vs. a tokenizer.json and its hash): where
    # both give the vocabulary size and chat template, those decide; else the whole record does.
    decisive = {k: tok.get(k) for k in ("vocab_size", "chat_template_sha256") if tok.get(k)}
    basis = decisive if len(decisive) == 2 else tok
    fingerprint = hashlib.sha256(json.dumps(basis, sort_keys=True, default=str).encode()).hexdigest()[:12]
    bits = [str(tok[k]) for k in ("model", "pre") if tok.get(k)]
    if tok.get("vocab_size"):
        bits.append(f"vocab {tok['vocab_size']}")
    if tok.get("chat_template_sha256"):
        bits.append(f"template {str(tok['chat_template_sha256'])[:8]}")
    return " ".join(bits) or fingerprint, fingerprint


def artifact_notes(profiles: list[dict[str, Any]]) -> list[str]:
    notes = []
    for i, a in enumerate(profiles):
        for b in profiles[i + 1:]:
            qa, qb = quantization_of(a), quantization_of(b)
            if qa and qb and qa != qb:
                notes.append(f"{a['label']} vs {b['label']}: artifacts differ in quantization ({qa} vs {qb}): "
                             "this is not a pure runtime race")
            ta, tb = tokenizer_of(a), tokenizer_of(b)
            if ta and tb and ta[1] != tb[1]:
                notes.append(f"{a['label']} vs {b['label']}: artifacts differ in tokenizer ({ta[0]} vs {tb[0]}): "
                             "token counts and tokens/s are not directly comparable")
    return notes


def condition_notes(profiles: list[dict[str, Any]], runs: list[dict[str, Any]]) -> list[str]:
    notes = []
    for p in profiles:
        if p["declared_temperature"] not in (None, 0, 0.0):
            notes.append(f"{p['label']} declares temperature {p['declared_temperature']}; bench ran it at 0")
        if p["runs_failed"]:
            notes.append(f"{p['label']}: {p['runs_failed']} run(s) failed: {p['errors'][0]}")
        without = [(r["repeat"], r["questions"] - r["generated"]) for r in runs
                   if r["label"] == p["label"] and r["ok"] and r.get("generated", 0) < r.get("questions", 0)]
        if without:
            notes.append(f"{p['label']}: some answers did not come from the model (repeat, count: {without}; "
                         f"outcomes {p['outcomes']}, modes {p['modes']}); TTFT and tokens/s count "
                         "generated answers only")
        varied = [f"{k} {q['min']:g}-{q['max']:g}" for k, q in p["quality"].items()
                  if q["n"] > 1 and q["min"] != q["max"]]
        if varied:
            notes.append(f"{p['label']}: answer quality varied between repeats at temperature 0 ({', '.join(varied)}; "
                         f"stop reasons {p['stop_reasons']}): compare the runs' answers in the JSON")
    return notes
