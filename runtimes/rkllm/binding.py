"""ctypes binding to Rockchip's librkllmrt.so, with struct layouts chosen by declared runtime version.

Why it is shaped like this:
- The library has no version function and its ABI changes at minor releases, so the layouts come
  from the version the profile declares, before any call. The version the library prints during
  rkllm_init is then compared with the declared one; a mismatch destroys the handle and raises.
- Buffers handed to the library (the by-value param return, the param passed to init) are padded,
  so a library of another ABI that writes or reads a larger struct stays inside our memory until
  the version line is checked. What a wrong-ABI library *does* with misread fields during init
  cannot be made safe in-process; `preflight_in_subprocess` runs init in a child process first
  so that a crash there becomes a clear error here.
- rkllm_run is synchronous and calls back on the library's thread: the callback never raises
  (ctypes would hand the C side garbage), decodes bytes with an incremental UTF-8 decoder (a
  character may arrive split across callbacks) and only appends to a queue.
"""

from __future__ import annotations

import codecs
import contextlib
import ctypes
import json
import os
import queue
import re
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from runtimes.base import GenerationError, RuntimeUnavailable
from runtimes.rkllm import layouts as L

_PAD = 256  # bytes of guard after every struct the library may write or read with another ABI's size

_LOG_PATTERNS = {
    "rkllm_runtime_version": r"rkllm-runtime version:\s*([0-9][\w.\-]*)",
    "rknpu_driver_version": r"rknpu driver version:\s*([0-9][\w.\-]*)",
    "platform": r"(?<![_\w])platform:\s*([A-Za-z0-9]+)",
    "rkllm_toolkit_version": r"rkllm-toolkit version:\s*([0-9][\w.\-]*)",
    "max_context_limit": r"max_context_limit:\s*(\d+)",
    "npu_core_num": r"npu_core_num:\s*(\d+)",
    "target_platform": r"target_platform:\s*([A-Za-z0-9]+)",
    "model_dtype": r"model_dtype:\s*([A-Za-z0-9_]+)",
}


class RuntimeVersionMismatch(RuntimeUnavailable):
    """The library printed a runtime version other than the declared (locked) one."""


def unsupported_version_message(version: str) -> str:
    return (f"RKLLM runtime {version} is not supported by this binding "
            f"(supported: {L.SUPPORTED_TEXT})")


# What rkllm_init printed, by _LOG_PATTERNS key: a number where the text is all digits, else the text.
InitInfo = dict[str, str | int]


def parse_init_log(text: str) -> InitInfo:
    """The provenance fields rkllm_init prints (runtime/driver/platform, toolkit/dtype/cores/context)."""
    out: InitInfo = {}
    for key, pattern in _LOG_PATTERNS.items():
        m = re.search(pattern, text)
        if m:
            value = m.group(1).rstrip(".,")
            out[key] = int(value) if value.isdigit() else value
    return out


@contextlib.contextmanager
def capture_process_output() -> Iterator[dict[str, str]]:
    """Redirect the process's fds 1 and 2 to a temp file; the C library logs there, not via Python.

    Yields a dict whose "text" is filled on exit. C stdio buffers are flushed before the fds go
    back, otherwise a fully-buffered printf would land on the real stdout after the check.
    """
    with _CAPTURE_LOCK:  # fds 1 and 2 are process-wide: one capture at a time
        with _capture_fds() as box:
            yield box


_CAPTURE_LOCK = threading.Lock()


@contextlib.contextmanager
def _capture_fds() -> Iterator[dict[str, str]]:
    box: dict[str, str] = {"text": ""}
    libc = ctypes.CDLL(None)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    libc.fflush(None)
    saved = [os.dup(1), os.dup(2)]
    with tempfile.TemporaryFile() as tmp:
        try:
            os.dup2(tmp.fileno(), 1)
            os.dup2(tmp.fileno(), 2)
            yield box
        finally:
            libc.fflush(None)
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
            tmp.seek(0)
            box["text"] = tmp.read().decode("utf-8", errors="replace")


@dataclass
class RunOutcome:
    """What one rkllm_run left behind, filled from the callback thread."""

    # text pieces, then None when rkllm_run has returned (put by the runtime's thread that called it)
    pieces: queue.Queue[str | None] = field(default_factory=queue.Queue)
    perf: dict[str, float | int] = field(default_factory=dict)  # RKLLMPerfStat's fields at the end of the run
    error: str | None = None
    tokens: int = 0
    paused: bool = False
    finished: bool = False
    rc: int | None = None


class _RunState:
    """Per-run callback state. Everything here runs on the library's thread; nothing may raise."""

    def __init__(self, outcome: RunOutcome, max_tokens: int | None) -> None:
        self.outcome = outcome
        self.max_tokens = max_tokens
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def _flush(self) -> None:
        tail = self.decoder.decode(b"", final=True)
        if tail:
            self.outcome.pieces.put(tail)

    def on_event(self, result: ctypes._Pointer[L.RKLLMResult], state: int) -> int:
        out = self.outcome
        if state in (L.RUN_NORMAL, L.RUN_WAITING):
            # WAITING carries the first bytes of an incomplete character; the decoder holds them.
            raw = ctypes.string_at(result.contents.text) if result and result.contents.text else b""
            text = self.decoder.decode(raw)
            if text:
                out.pieces.put(text)
            if state == L.RUN_NORMAL:
                out.tokens += 1
                if self.max_tokens is not None and out.tokens >= self.max_tokens:
                    out.paused = True
                    self._flush()
                    return 1  # pause: the runtime stops generating and rkllm_run returns
        elif state == L.RUN_FINISH:
            self._flush()
            if result:
                p = result.contents.perf
                out.perf = {name: round(float(getattr(p, name)), 3) if "ms" in name or "mb" in name
                            else int(getattr(p, name)) for name, *_ in L.RKLLMPerfStat._fields_}
            out.finished = True
        elif state == L.RUN_ERROR:
            self._flush()
            out.error = "the RKLLM runtime reported an error (callback state RKLLM_RUN_ERROR)"
        return 0


class RKLLMBinding:
    """One librkllmrt.so loaded with the layouts of one declared runtime version; at most one handle."""

    def __init__(self, lib_path: str, version: str) -> None:
        family = L.abi_family(version)
        if family is None:
            raise RuntimeUnavailable(unsupported_version_message(version))
        self.version = version
        self.layout = L.LAYOUTS[family]
        self.lib_path = lib_path
        try:
            self.lib = ctypes.CDLL(lib_path)
        except OSError as exc:
            raise RuntimeUnavailable(f"cannot load RKLLM runtime library {lib_path}: {exc}") from exc
        missing = [n for n in ("rkllm_createDefaultParam", "rkllm_init", "rkllm_run", "rkllm_abort",
                               "rkllm_is_running", "rkllm_destroy") if not hasattr(self.lib, n)]
        if missing:
            raise RuntimeUnavailable(f"{lib_path} does not export {', '.join(missing)}: not an RKLLM runtime")
        self._ParamBox = type("ParamBox", (ctypes.Structure,),
                              {"_fields_": [("param", self.layout.Param), ("guard", ctypes.c_uint8 * _PAD)]})
        self.lib.rkllm_createDefaultParam.restype = self._ParamBox  # struct returned by value
        self.lib.rkllm_createDefaultParam.argtypes = []
        for name, (restype, argtypes) in L.prototypes(self.layout).items():
            fn = getattr(self.lib, name, None)
            if fn is not None:
                fn.restype, fn.argtypes = restype, argtypes
        self.handle = L.c_handle()
        self._c_callback = L.LLMResultCallback(self._on_result)  # kept alive as long as the binding
        self._callbacks: L.RKLLMCallback | None = None
        self._param_box: ctypes.Structure | None = None
        self._state: _RunState | None = None
        self._lock = threading.Lock()
        self.init_log = ""
        self.init_info: InitInfo = {}

    # ------------------------------------------------------------ lifecycle

    def default_param(self) -> ctypes.Structure:
        """A padded box whose `.param` is rkllm_createDefaultParam()'s struct, ready to fill."""
        box: ctypes.Structure = self.lib.rkllm_createDefaultParam()
        return box

    def init(self, box: ctypes.Structure) -> InitInfo:
        """rkllm_init with the log captured; checks the printed version against the declared one."""
        self._param_box = box  # the library may keep pointers into it (model_path)
        if self.layout.callback_struct:
            self._callbacks = L.RKLLMCallback()
            self._callbacks.result_callback = self._c_callback
            cb_arg: object = ctypes.byref(self._callbacks)
        else:
            cb_arg = self._c_callback
        with capture_process_output() as captured:
            rc = self.lib.rkllm_init(ctypes.byref(self.handle), ctypes.byref(box), cb_arg)
        self.init_log = captured["text"]
        self.init_info = parse_init_log(self.init_log)
        if rc != 0 or not self.handle:
            self.handle = L.c_handle()
            tail = " | ".join(line.strip() for line in self.init_log.strip().splitlines()[-4:])
            raise RuntimeUnavailable(f"rkllm_init failed (rc={rc}) for {box.param.model_path!r}: "
                                     f"{tail or 'the runtime printed nothing'}")
        printed = self.init_info.get("rkllm_runtime_version")
        self.check_version(None if printed is None else str(printed))
        return self.init_info

    def check_version(self, printed: str | None) -> None:
        if printed is None or printed == self.version:
            return
        self.destroy()
        same = L.abi_family(printed) == self.layout.family
        raise RuntimeVersionMismatch(
            f"RKLLM runtime version mismatch: the profile locks {self.version} but {self.lib_path} "
            f"reports {printed}"
            + ("" if same else f" (another ABI: {self._abi_text(printed)}; handle destroyed before any run)")
            + "; fix runtime_version or install the locked library")

    @staticmethod
    def _abi_text(version: str) -> str:
        fam = L.abi_family(version)
        return f"ABI family {fam}" if fam else unsupported_version_message(version)

    def destroy(self) -> None:
        if self.handle:
            self.lib.rkllm_destroy(self.handle)
            self.handle = L.c_handle()

    # ------------------------------------------------------------ calls on a live handle

    def _need_handle(self) -> None:
        if not self.handle:
            raise GenerationError("the RKLLM model is not loaded (rkllm_init has not succeeded)")

    def set_chat_template(self, system: str, prefix: str, postfix: str) -> None:
        self._need_handle()
        if not hasattr(self.lib, "rkllm_set_chat_template"):
            raise GenerationError("this RKLLM runtime has no rkllm_set_chat_template")
        rc = self.lib.rkllm_set_chat_template(self.handle, system.encode(), prefix.encode(), postfix.encode())
        if rc != 0:
            raise GenerationError(f"rkllm_set_chat_template failed (rc={rc})")

    def clear_kv_cache(self, keep_system_prompt: bool = True) -> int:
        self._need_handle()
        return int(self.lib.rkllm_clear_kv_cache(self.handle, int(keep_system_prompt), None, None))

    def abort(self) -> int:
        return int(self.lib.rkllm_abort(self.handle)) if self.handle else 0

    def is_running(self) -> bool:
        """rkllm.h: 'Status code (0 if a task is running, non-zero for otherwise)'."""
        return bool(self.handle) and self.lib.rkllm_is_running(self.handle) == 0

    def run(self, prompt: str, outcome: RunOutcome, *, role: str = "user", max_new_tokens: int | None = None,
            sampling: dict[str, float] | None = None, keep_history: bool = False) -> RunOutcome:
        """Blocking rkllm_run; text pieces go to outcome.pieces as they are decoded."""
        self._need_handle()
        if not self._lock.acquire(blocking=False):
            raise GenerationError("this RKLLM handle is already generating (one request at a time)")
        try:
            inp = self.layout.Input()
            prompt_b, role_b = prompt.encode("utf-8"), role.encode("utf-8")
            inp.role = role_b
            inp.enable_thinking = False
            inp.input_type = L.INPUT_PROMPT
            inp.prompt_input = prompt_b
            infer = self.layout.InferParam()
            infer.mode = L.INFER_GENERATE
            infer.keep_history = int(keep_history)
            sp = None
            if self.layout.per_run_sampling:
                infer.max_new_tokens = int(max_new_tokens) if max_new_tokens else 0
                if sampling:
                    sp = L.RKLLMSamplingParam(mirostat=0, mirostat_tau=5.0, mirostat_eta=0.1)
                    for key in ("top_k", "top_p", "temperature", "repeat_penalty"):
                        if key in sampling:
                            setattr(sp, key, sampling[key])
                    infer.sampling_params = ctypes.pointer(sp)
            self._state = _RunState(outcome, max_new_tokens)
            try:
                rc = self.lib.rkllm_run(self.handle, ctypes.byref(inp), ctypes.byref(infer), None)
                outcome.rc = int(rc)
            finally:
                self._state = None
            del prompt_b, role_b, sp  # alive until here: the library reads them during the run
            return outcome
        finally:
            self._lock.release()

    def _on_result(self, result: ctypes._Pointer[L.RKLLMResult], userdata: object, state: int) -> int:
        try:
            st = self._state
            return st.on_event(result, state) if st is not None else 0
        except BaseException as exc:  # noqa: BLE001 - must never propagate into C
            with contextlib.suppress(BaseException):
                if self._state is not None:
                    self._state.outcome.error = f"callback failed: {exc!r}"
            return 0


# ---------------------------------------------------------------- isolated init (crash-safe check)


def preflight_in_subprocess(lib_path: str, version: str, model_path: str, max_context_len: int,
                            timeout_s: float = 300.0) -> dict[str, object]:
    """Run rkllm_init in a child process and return what it printed, so a library whose ABI does not
    match the declared version crashes the child (reported clearly) instead of this process."""
    args = json.dumps({"lib": lib_path, "version": version, "model": model_path, "ctx": max_context_len})
    root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    try:
        proc = subprocess.run([sys.executable, "-m", "runtimes.rkllm.binding", args], cwd=root, env=env,
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
