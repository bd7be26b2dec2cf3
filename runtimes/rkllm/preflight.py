"""rkllm_init in a child process first, so that a library of another ABI crashes the child, not us.

What a wrong-ABI library *does* with misread fields during init cannot be made safe in-process;
the child reports what rkllm_init printed (or why it failed) as one JSON line on stdout.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from runtimes.base import RuntimeUnavailable
from runtimes.rkllm.binding import RKLLMBinding, RuntimeVersionMismatch


def preflight_in_subprocess(lib_path: str, version: str, model_path: str, max_context_len: int,
                            timeout_s: float = 300.0) -> dict[str, object]:
    """Run rkllm_init in a child process and return what it printed, so a library whose ABI does not
    match the declared version crashes the child (reported clearly) instead of this process."""
    args = json.dumps({"lib": lib_path, "version": version, "model": model_path, "ctx": max_context_len})
    root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    try:
        proc = subprocess.run([sys.executable, "-m", "runtimes.rkllm.preflight", args], cwd=root, env=env,
                              capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired as exc:
        raise RuntimeUnavailable(f"RKLLM init check did not finish within {timeout_s:.0f} s") from exc
    if proc.returncode < 0:
        sig = signal.Signals(-proc.returncode).name
        raise RuntimeUnavailable(
            f"{lib_path} crashed ({sig}) during rkllm_init with the {version} struct layouts: the installed "
            f"library is probably another RKLLM version than the locked {version}; "
            f"its log: {proc.stdout.strip()[-300:] or proc.stderr.strip()[-300:] or '(none)'}")
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        raise RuntimeUnavailable(f"RKLLM init check failed (exit {proc.returncode}): "
                                 f"{(proc.stderr or proc.stdout).strip()[-400:]}")
    report: dict[str, object] = json.loads(lines[-1])  # what _child_main printed
    if report.get("error"):
        kind = RuntimeVersionMismatch if report.get("mismatch") else RuntimeUnavailable
        raise kind(report["error"])
    return report


def _child_main(raw: str) -> int:
    spec = json.loads(raw)
    try:
        b = RKLLMBinding(spec["lib"], spec["version"])
        box = b.default_param()
        model_b = spec["model"].encode()
        box.param.model_path = model_b
        box.param.max_context_len = int(spec["ctx"])
        info = b.init(box)
        b.destroy()
        print(json.dumps({"info": info, "log": b.init_log[-2000:]}))
    except RuntimeUnavailable as exc:
        print(json.dumps({"error": str(exc), "mismatch": isinstance(exc, RuntimeVersionMismatch)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(_child_main(sys.argv[1]))
