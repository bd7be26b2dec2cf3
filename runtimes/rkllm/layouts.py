"""Which ctypes layouts of rkllm.h to use, by ABI family of Rockchip's librkllmrt.so.

The library has no version function and its structs change between minor releases; handing a
1.3.0 library a 1.2.x struct (or the reverse) corrupts memory. So every layout here is keyed by
an ABI family, chosen from the *declared* runtime version before the library is touched. The
structs themselves are in structs_shared, structs_12 and structs_13.

Families (checked against rkllm.h of airockchip/rknn-llm and the size table in RKLLM.md):
  "1.2"  runtime 1.2.1, 1.2.2, 1.2.3  (bare result-callback pointer, int-returning callback)
  "1.3"  runtime 1.3.0                (RKLLMCallback struct, per-run sampling/max_new_tokens)
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

from runtimes.rkllm.structs_12 import RKLLMInferParam_12, RKLLMInput_12, RKLLMParam_12
from runtimes.rkllm.structs_13 import RKLLMCallback, RKLLMInferParam_13, RKLLMInput_13, RKLLMParam_13
from runtimes.rkllm.structs_shared import LLMResultCallback, RKLLMExtendParam, RKLLMResult

SUPPORTED_VERSIONS: dict[str, str] = {"1.2.1": "1.2", "1.2.2": "1.2", "1.2.3": "1.2", "1.3.0": "1.3"}
SUPPORTED_TEXT = "1.2.1–1.2.3, 1.3.0"

# Sizes a correct build must have on LP64 (x86_64 and aarch64 agree); asserted at import below.
EXPECTED_SIZES: dict[str, dict[str, int]] = {
    "1.2": {"RKLLMParam": 208, "RKLLMExtendParam": 120, "RKLLMInput": 64, "RKLLMInferParam": 32,
            "RKLLMResult": 72},
    "1.3": {"RKLLMParam": 184, "RKLLMExtendParam": 120, "RKLLMInput": 160, "RKLLMInferParam": 40,
            "RKLLMResult": 72, "RKLLMCallback": 48},
}

c_handle = ctypes.c_void_p


def abi_family(version: str) -> str | None:
    """ABI family of a runtime version string, or None when this binding does not know it."""
    return SUPPORTED_VERSIONS.get(str(version).strip())


# ---------------------------------------------------------------- one family, one bundle


@dataclass(frozen=True)
class Layout:
    """Everything version-dependent that the binding needs, for one ABI family."""

    family: str
    Param: type[ctypes.Structure]
    Input: type[ctypes.Structure]
    InferParam: type[ctypes.Structure]
    callback_struct: bool  # 1.3: rkllm_init takes RKLLMCallback*; 1.2: a bare function pointer
    per_run_sampling: bool  # 1.3: RKLLMInferParam carries sampling params and max_new_tokens

    def structs(self) -> dict[str, type[ctypes.Structure]]:
        out: dict[str, type[ctypes.Structure]] = {
            "RKLLMParam": self.Param, "RKLLMExtendParam": RKLLMExtendParam, "RKLLMInput": self.Input,
            "RKLLMInferParam": self.InferParam, "RKLLMResult": RKLLMResult,
        }
        if self.callback_struct:
            out["RKLLMCallback"] = RKLLMCallback
        return out


LAYOUTS: dict[str, Layout] = {
    "1.2": Layout("1.2", RKLLMParam_12, RKLLMInput_12, RKLLMInferParam_12, False, False),
    "1.3": Layout("1.3", RKLLMParam_13, RKLLMInput_13, RKLLMInferParam_13, True, True),
}


def prototypes(layout: Layout) -> dict[str, tuple[type, list[type]]]:
    """(restype, argtypes) of each exported function for this family.

    rkllm_createDefaultParam returns the param struct by value; the binding uses a padded return
    type built on layout.Param (see binding.py) so a library of another ABI cannot write past it.
    """
    P = ctypes.POINTER
    cb_arg = P(RKLLMCallback) if layout.callback_struct else LLMResultCallback
    protos: dict[str, tuple[type, list[type]]] = {
        "rkllm_init": (ctypes.c_int, [P(c_handle), ctypes.c_void_p, cb_arg]),
        "rkllm_run": (ctypes.c_int, [c_handle, P(layout.Input), P(layout.InferParam), ctypes.c_void_p]),
        "rkllm_run_async": (ctypes.c_int, [c_handle, P(layout.Input), P(layout.InferParam),
                                           ctypes.c_void_p]),
        "rkllm_abort": (ctypes.c_int, [c_handle]),
        "rkllm_is_running": (ctypes.c_int, [c_handle]),
        "rkllm_destroy": (ctypes.c_int, [c_handle]),
        "rkllm_clear_kv_cache": (ctypes.c_int, [c_handle, ctypes.c_int, P(ctypes.c_int), P(ctypes.c_int)]),
        "rkllm_set_chat_template": (ctypes.c_int, [c_handle, ctypes.c_char_p, ctypes.c_char_p,
                                                   ctypes.c_char_p]),
        "rkllm_load_prompt_cache": (ctypes.c_int, [c_handle, ctypes.c_char_p]),
        "rkllm_release_prompt_cache": (ctypes.c_int, [c_handle]),
    }
    return protos


def _check_sizes() -> None:
    for family, sizes in EXPECTED_SIZES.items():
        structs = LAYOUTS[family].structs()
        for name, size in sizes.items():
            got = ctypes.sizeof(structs[name])
            if ctypes.sizeof(ctypes.c_void_p) == 8 and got != size:
                raise AssertionError(f"rkllm layout {family} {name}: {got} bytes, header says {size}")


_check_sizes()
