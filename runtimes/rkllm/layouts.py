"""ctypes mirrors of rkllm.h, one family per ABI of Rockchip's librkllmrt.so.

The library has no version function and its structs change between minor releases; handing a
1.3.0 library a 1.2.x struct (or the reverse) corrupts memory. So every layout here is keyed by
an ABI family, chosen from the *declared* runtime version before the library is touched.

Families (checked against rkllm.h of airockchip/rknn-llm and the size table in RKLLM.md):
  "1.2"  runtime 1.2.1, 1.2.2, 1.2.3  (bare result-callback pointer, int-returning callback)
  "1.3"  runtime 1.3.0                (RKLLMCallback struct, per-run sampling/max_new_tokens)
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

# LLMCallState (1.2.1+)
RUN_NORMAL, RUN_WAITING, RUN_FINISH, RUN_ERROR = 0, 1, 2, 3
# RKLLMInputType / RKLLMInferMode
INPUT_PROMPT = 0
INFER_GENERATE = 0

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


# ---------------------------------------------------------------- shared by both families


class RKLLMExtendParam(ctypes.Structure):
    # n_batch / use_cross_attn were carved out of `reserved` in 1.2.x; the size stayed 120.
    _fields_ = [
        ("base_domain_id", ctypes.c_int32),
        ("embed_flash", ctypes.c_int8),
        ("enabled_cpus_num", ctypes.c_int8),
        ("enabled_cpus_mask", ctypes.c_uint32),
        ("n_batch", ctypes.c_uint8),
        ("use_cross_attn", ctypes.c_int8),
        ("reserved", ctypes.c_uint8 * 104),
    ]


class RKLLMEmbedInput(ctypes.Structure):
    _fields_ = [("embed", ctypes.POINTER(ctypes.c_float)), ("n_tokens", ctypes.c_size_t)]


class RKLLMTokenInput(ctypes.Structure):
    _fields_ = [("input_ids", ctypes.POINTER(ctypes.c_int32)), ("n_tokens", ctypes.c_size_t)]


class RKLLMLoraParam(ctypes.Structure):
    _fields_ = [("lora_adapter_name", ctypes.c_char_p)]


class RKLLMPromptCacheParam(ctypes.Structure):
    _fields_ = [("save_prompt_cache", ctypes.c_int), ("prompt_cache_path", ctypes.c_char_p)]


class RKLLMResultLastHiddenLayer(ctypes.Structure):
    _fields_ = [("hidden_states", ctypes.POINTER(ctypes.c_float)), ("embd_size", ctypes.c_int),
                ("num_tokens", ctypes.c_int)]


class RKLLMResultLogits(ctypes.Structure):
    _fields_ = [("logits", ctypes.POINTER(ctypes.c_float)), ("vocab_size", ctypes.c_int),
                ("num_tokens", ctypes.c_int)]


class RKLLMPerfStat(ctypes.Structure):
    _fields_ = [
        ("prefill_time_ms", ctypes.c_float),
        ("prefill_tokens", ctypes.c_int),
        ("generate_time_ms", ctypes.c_float),
        ("generate_tokens", ctypes.c_int),
        ("memory_usage_mb", ctypes.c_float),
    ]


class RKLLMResult(ctypes.Structure):
    """Same layout from 1.2.1 to 1.3.0 (perf was appended in 1.2.1)."""

    _fields_ = [
        ("text", ctypes.c_void_p),  # raw bytes, maybe a partial UTF-8 sequence: never c_char_p-decode
        ("token_id", ctypes.c_int32),
        ("last_hidden_layer", RKLLMResultLastHiddenLayer),
        ("logits", RKLLMResultLogits),
        ("perf", RKLLMPerfStat),
    ]


# int callback(RKLLMResult*, void* userdata, LLMCallState state): 0 continue, 1 pause
LLMResultCallback = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(RKLLMResult), ctypes.c_void_p,
                                     ctypes.c_int)


# ---------------------------------------------------------------- 1.2.1 – 1.2.3


class RKLLMParam_12(ctypes.Structure):
    _fields_ = [
        ("model_path", ctypes.c_char_p),
        ("max_context_len", ctypes.c_int32),
        ("max_new_tokens", ctypes.c_int32),
        ("top_k", ctypes.c_int32),
        ("n_keep", ctypes.c_int32),
        ("top_p", ctypes.c_float),
        ("temperature", ctypes.c_float),
        ("repeat_penalty", ctypes.c_float),
        ("frequency_penalty", ctypes.c_float),
        ("presence_penalty", ctypes.c_float),
        ("mirostat", ctypes.c_int32),
        ("mirostat_tau", ctypes.c_float),
        ("mirostat_eta", ctypes.c_float),
        ("skip_special_token", ctypes.c_bool),
        ("is_async", ctypes.c_bool),
        ("img_start", ctypes.c_char_p),
        ("img_end", ctypes.c_char_p),
        ("img_content", ctypes.c_char_p),
        ("extend_param", RKLLMExtendParam),
    ]


class RKLLMMultiModelInput_12(ctypes.Structure):
    _fields_ = [
        ("prompt", ctypes.c_char_p),
        ("image_embed", ctypes.POINTER(ctypes.c_float)),
        ("n_image_tokens", ctypes.c_size_t),
        ("n_image", ctypes.c_size_t),
        ("image_width", ctypes.c_size_t),
        ("image_height", ctypes.c_size_t),
    ]


class _InputUnion_12(ctypes.Union):
    _fields_ = [
        ("prompt_input", ctypes.c_char_p),
        ("embed_input", RKLLMEmbedInput),
        ("token_input", RKLLMTokenInput),
        ("multimodal_input", RKLLMMultiModelInput_12),
    ]


class RKLLMInput_12(ctypes.Structure):
    _anonymous_ = ("u",)
    _fields_ = [
        ("role", ctypes.c_char_p),
        ("enable_thinking", ctypes.c_bool),
        ("input_type", ctypes.c_int),
        ("u", _InputUnion_12),
    ]


class RKLLMInferParam_12(ctypes.Structure):
    _fields_ = [
        ("mode", ctypes.c_int),
        ("lora_params", ctypes.POINTER(RKLLMLoraParam)),
        ("prompt_cache_params", ctypes.POINTER(RKLLMPromptCacheParam)),
        ("keep_history", ctypes.c_int),
    ]


# ---------------------------------------------------------------- 1.3.0


class RKLLMParam_13(ctypes.Structure):
    _fields_ = [
        ("model_path", ctypes.c_char_p),
        ("max_context_len", ctypes.c_int32),
        ("max_new_tokens", ctypes.c_int32),
        ("top_k", ctypes.c_int32),
        ("n_keep", ctypes.c_int32),
        ("top_p", ctypes.c_float),
        ("temperature", ctypes.c_float),
        ("repeat_penalty", ctypes.c_float),
        ("frequency_penalty", ctypes.c_float),
        ("presence_penalty", ctypes.c_float),
        ("mirostat", ctypes.c_int32),
        ("mirostat_tau", ctypes.c_float),
        ("mirostat_eta", ctypes.c_float),
        ("skip_special_token", ctypes.c_bool),
        ("ignore_eos_token", ctypes.c_bool),
        ("is_async", ctypes.c_bool),
        ("extend_param", RKLLMExtendParam),
    ]


class _ImageInput_13(ctypes.Structure):
    _fields_ = [
        ("image_embed", ctypes.POINTER(ctypes.c_float)),
        ("n_image_tokens", ctypes.c_size_t),
        ("n_image", ctypes.c_size_t),
        ("image_start", ctypes.c_char_p),
        ("image_end", ctypes.c_char_p),
        ("image_content", ctypes.c_char_p),
        ("image_width", ctypes.c_size_t),
        ("image_height", ctypes.c_size_t),
    ]


class _VideoInput_13(ctypes.Structure):
    _fields_ = [
        ("video_embed", ctypes.POINTER(ctypes.c_float)),
        ("n_frame_tokens", ctypes.c_size_t),
        ("n_frame_per_video", ctypes.c_size_t),
        ("n_video", ctypes.c_size_t),
        ("video_start", ctypes.c_char_p),
        ("video_end", ctypes.c_char_p),
        ("video_content", ctypes.c_char_p),
        ("frame_width", ctypes.c_size_t),
        ("frame_height", ctypes.c_size_t),
    ]


class RKLLMMultiModalInput_13(ctypes.Structure):
    _fields_ = [("prompt", ctypes.c_char_p), ("image", _ImageInput_13), ("video", _VideoInput_13)]


class _InputUnion_13(ctypes.Union):
    _fields_ = [
        ("prompt_input", ctypes.c_char_p),
        ("embed_input", RKLLMEmbedInput),
        ("token_input", RKLLMTokenInput),
        ("multimodal_input", RKLLMMultiModalInput_13),
    ]


class RKLLMInput_13(ctypes.Structure):
    _anonymous_ = ("u",)
    _fields_ = [
        ("role", ctypes.c_char_p),
        ("enable_thinking", ctypes.c_bool),
        ("input_type", ctypes.c_int),
        ("u", _InputUnion_13),
    ]


class RKLLMSamplingParam(ctypes.Structure):
    _fields_ = [
        ("top_k", ctypes.c_int32),
        ("top_p", ctypes.c_float),
        ("temperature", ctypes.c_float),
        ("repeat_penalty", ctypes.c_float),
        ("frequency_penalty", ctypes.c_float),
        ("presence_penalty", ctypes.c_float),
        ("mirostat", ctypes.c_int32),
        ("mirostat_tau", ctypes.c_float),
        ("mirostat_eta", ctypes.c_float),
    ]


class RKLLMInferParam_13(ctypes.Structure):
    _fields_ = [
        ("mode", ctypes.c_int),
        ("lora_params", ctypes.POINTER(RKLLMLoraParam)),
        ("prompt_cache_params", ctypes.POINTER(RKLLMPromptCacheParam)),
        ("sampling_params", ctypes.POINTER(RKLLMSamplingParam)),
        ("keep_history", ctypes.c_int),
        ("max_new_tokens", ctypes.c_int32),
    ]


# int (*LLMTokenizerCallback)(void*, const char*, int32_t, int32_t*, int32_t)
LLMTokenizerCallback = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int32,
                                        ctypes.POINTER(ctypes.c_int32), ctypes.c_int32)
# int (*LLMGetEmbedCallback)(void*, int32_t*, uint64_t, void*, uint64_t)
LLMGetEmbedCallback = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int32),
                                       ctypes.c_uint64, ctypes.c_void_p, ctypes.c_uint64)


class RKLLMCallback(ctypes.Structure):
    _fields_ = [
        ("result_callback", LLMResultCallback),
        ("result_userdata", ctypes.c_void_p),
        ("tokenizer_callback", LLMTokenizerCallback),
        ("tokenizer_userdata", ctypes.c_void_p),
        ("embed_callback", LLMGetEmbedCallback),
        ("embed_userdata", ctypes.c_void_p),
    ]


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
