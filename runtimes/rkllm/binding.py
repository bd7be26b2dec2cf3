"""ctypes binding to Rockchip's librkllmrt.so, with struct layouts chosen by declared runtime version.

Why it is shaped like this:
- The library has no version function and its ABI changes at minor releases, so the layouts come
  from the version the profile declares, before any call. The version the library prints during
  rkllm_init is then compared with the declared one; a mismatch destroys the handle and raises.
- Buffers handed to the library (the by-value param return, the param passed to init) are padded,
  so a library of another ABI that writes or reads a larger struct stays inside our memory until
  the version line is checked. What a wrong-ABI library *does* with misread fields during init
  cannot be made safe in-process; `preflight.preflight_in_subprocess` runs init in a child process
  first so that a crash there becomes a clear error here.
- rkllm_run calls back on the library's thread; what the callback may do is in `run_state`.
"""

from __future__ import annotations

import contextlib
import ctypes
import threading

from runtimes.base import GenerationError, RuntimeUnavailable
from runtimes.rkllm import layouts as L
from runtimes.rkllm.init_log import InitInfo, capture_process_output, parse_init_log
from runtimes.rkllm.run_state import RunOutcome, RunState
from runtimes.rkllm.structs_13 import RKLLMCallback, RKLLMSamplingParam
from runtimes.rkllm.structs_shared import INFER_GENERATE, INPUT_PROMPT, LLMResultCallback, RKLLMResult

_PAD = 256  # bytes of guard after every struct the library may write or read with another ABI's size


class RuntimeVersionMismatch(RuntimeUnavailable):
    """The library printed a runtime version other than the declared (locked) one."""


def unsupported_version_message(version: str) -> str:
    return (f"RKLLM runtime {version} is not supported by this binding "
            f"(supported: {L.SUPPORTED_TEXT})")


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
        self._c_callback = LLMResultCallback(self._on_result)  # kept alive as long as the binding
        self._callbacks: RKLLMCallback | None = None
        self._param_box: ctypes.Structure | None = None
        self._state: RunState | None = None
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
            self._callbacks = RKLLMCallback()
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
            inp.input_type = INPUT_PROMPT
            inp.prompt_input = prompt_b
            infer = self.layout.InferParam()
            infer.mode = INFER_GENERATE
            infer.keep_history = int(keep_history)
            sp = None
            if self.layout.per_run_sampling:
                infer.max_new_tokens = int(max_new_tokens) if max_new_tokens else 0
                if sampling:
                    sp = RKLLMSamplingParam(mirostat=0, mirostat_tau=5.0, mirostat_eta=0.1)
                    for key in ("top_k", "top_p", "temperature", "repeat_penalty"):
                        if key in sampling:
                            setattr(sp, key, sampling[key])
                    infer.sampling_params = ctypes.pointer(sp)
            self._state = RunState(outcome, max_new_tokens)
            try:
                rc = self.lib.rkllm_run(self.handle, ctypes.byref(inp), ctypes.byref(infer), None)
                outcome.rc = int(rc)
            finally:
                self._state = None
            del prompt_b, role_b, sp  # alive until here: the library reads them during the run
            return outcome
        finally:
            self._lock.release()

    def _on_result(self, result: ctypes._Pointer[RKLLMResult], userdata: object, state: int) -> int:
        try:
            st = self._state
            return st.on_event(result, state) if st is not None else 0
        except BaseException as exc:  # noqa: BLE001 - must never propagate into C
            with contextlib.suppress(BaseException):
                if self._state is not None:
                    self._state.outcome.error = f"callback failed: {exc!r}"
            return 0
