"""The ExecuTorch artifact folder: its files checked against PROVENANCE.json, and its delegates.

Why a module of its own: what an artifact *is* (files, hashes, provenance, which backends its
program delegates to) is read without running it, by load() and by gate 2 alike. The delegate
list comes from the program itself (the .pte's execution plan, deserialized by executorch's own
schema), so gate 2 does not take the export's word for it.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import TypedDict

from runtimes.base import RuntimeUnavailable, json_table
from runtimes.hashing import file_sha256

PTE = "model.pte"
TOKENIZER = "tokenizer.json"
TEMPLATE = "chat_template.jinja"
SPECIAL = "tokenizer_config.json"
PROVENANCE = "PROVENANCE.json"
REQUIRED = (PTE, TOKENIZER, TEMPLATE)
XNNPACK = "XnnpackBackend"


def resolve_folder(artifact: str) -> Path:
    """The artifact is the export folder, or its model.pte (the folder is then its parent)."""
    path = Path(artifact).expanduser()
    return path.parent if path.suffix == ".pte" else path


def check_folder(folder: Path, cache_dir: str | None = None) -> tuple[dict[str, str], dict[str, object] | None]:
    """sha256 of every file; refused when one is missing or differs from what PROVENANCE recorded."""
    if not folder.is_dir():
        raise RuntimeUnavailable(f"ExecuTorch artifact folder not found: {folder}")
    missing = [name for name in REQUIRED if not (folder / name).is_file()]
    if missing:
        raise RuntimeUnavailable(f"ExecuTorch artifact {folder} lacks {', '.join(missing)} "
                                 "(write it with deploy/export_executorch.py)")
    names = [*REQUIRED, *(n for n in (SPECIAL, PROVENANCE) if (folder / n).is_file())]
    hashes = {name: file_sha256(folder / name, cache_dir) for name in names}
    provenance: dict[str, object] | None = None
    if (folder / PROVENANCE).is_file():
        try:
            provenance = json.loads((folder / PROVENANCE).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise RuntimeUnavailable(f"{folder / PROVENANCE} is not readable JSON: {exc}") from exc
        recorded = json_table((provenance or {}).get("outputs"), f"{folder / PROVENANCE}: outputs")
        changed = [name for name, info in recorded.items()
                   if name in hashes and isinstance(info, dict) and info.get("sha256") != hashes[name]]
        if changed:
            raise RuntimeUnavailable(
                f"ExecuTorch artifact {folder}: {', '.join(sorted(changed))} differ from PROVENANCE.json "
                "(a file was replaced after export; re-export instead)")
    return hashes, provenance


def special_tokens(folder: Path) -> dict[str, object]:
    """bos/eos written beside the tokenizer by the export (empty when absent)."""
    path = folder / SPECIAL
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RuntimeUnavailable(f"{path} is not readable JSON: {exc}") from exc
    return data if isinstance(data, dict) else {}


class MethodPlan(TypedDict):
    """One method of a program: who runs its instructions."""

    delegates: list[str]  # backend ids
    delegate_blobs: int
    delegate_calls: int
    kernel_calls: int  # instructions run by a portable kernel
    operators: list[str]


class Trace(TypedDict, total=False):
    """What one traced forward's event trace says (etdump_evidence), or why it could not be read (error)."""

    delegate_calls: int
    portable_kernel_calls: int
    delegate_operators: dict[str, int]  # the busiest XNNPACK operators, events each
    delegate_operator_events: int
    error: str


def program_delegates(pte: Path) -> dict[str, MethodPlan]:
    """Per method: delegate backend ids and how many instructions call a delegate vs a portable kernel."""
    from executorch.exir._serialize._program import deserialize_pte_binary

    program = deserialize_pte_binary(pte.read_bytes())
    program = getattr(program, "program", program)  # newer executorch wraps it with its named data
    plans: dict[str, MethodPlan] = {}
    for plan in program.execution_plan:
        delegate_calls = kernel_calls = 0
        for chain in plan.chains:
            for instruction in chain.instructions:
                kind = type(instruction.instr_args).__name__
                delegate_calls += kind == "DelegateCall"
                kernel_calls += kind == "KernelCall"
        plans[plan.name] = {
            "delegates": sorted({d.id for d in plan.delegates}),
            "delegate_blobs": len(plan.delegates),
            "delegate_calls": delegate_calls,
            "kernel_calls": kernel_calls,
            "operators": sorted({op.name for op in plan.operators}),
        }
    return plans


def chain_data(folder: Path, hashes: dict[str, str], provenance: dict[str, object] | None,
               runtime: dict[str, object], delegates: dict[str, MethodPlan], generation: dict[str, object] | None,
               context: int, vocab_size: int | None = None) -> dict[str, object]:
    """source -> conversion -> quantization -> backend -> runtime -> tokenizer/template -> generation.

    The tokenizer record names its vocabulary size and chat template hash as the other backends' do,
    so that `manualqa bench` compares tokenizers on what decides the tokens, not on file layout."""
    prov = provenance or {}
    pte = folder / PTE
    return {  # runtime first: doctor reads a locked version from the first key of that name
        "runtime": runtime,
        "source": prov.get("source") or {"note": "no PROVENANCE.json beside the program: source unknown"},
        "conversion": prov.get("conversion") or {},
        "quantization": prov.get("quantization") or "unknown (no PROVENANCE.json)",
        "backend": "executorch",
        "delegate": {"expected": XNNPACK, "program": delegates},
        "tokenizer": {"file": TOKENIZER, "sha256": hashes.get(TOKENIZER),
                      **json_table(prov.get("tokenizer"), "PROVENANCE.json's tokenizer"),
                      "vocab_size": vocab_size, "chat_template_sha256": hashes.get(TEMPLATE)},
        "chat_template": {"file": TEMPLATE, "sha256": hashes.get(TEMPLATE),
                          **json_table(prov.get("chat_template"), "PROVENANCE.json's chat_template")},
        "program": prov.get("program") or {},
        "context": {"n_ctx": context},
        "generation": generation,
        "artifact": {"path": str(pte), "sha256": hashes.get(PTE), "size_bytes": pte.stat().st_size,
                     "files": hashes},
    }


def etdump_evidence(et_runtime: ModuleType, torch: ModuleType, pte: Path, workdir: Path) -> Trace:
    """One profiled forward of the program: what ExecuTorch's own event trace says ran where.

    The program is loaded a second time with ETDump on (the serving copy stays unprofiled), one
    token goes through it, and the trace is read back: DELEGATE_CALL events and the operator names
    XNNPACK reports (e.g. "Fully Connected (NC, QD8, F32, QC8W) GEMM") against portable kernel calls.
    """
    from executorch.devtools.etdump.serialize import deserialize_from_etdump_flatcc

    program = et_runtime.Runtime.get().load_program(pte, enable_etdump=True, debug_buffer_size=0)
    method = program.load_method("forward")
    method.execute([torch.tensor([[0]], dtype=torch.long), torch.tensor([0], dtype=torch.long)])
    trace, debug = workdir / "forward.etdump", workdir / "forward.debug"
    program.write_etdump_result_to_file(str(trace), str(debug))
    dump = deserialize_from_etdump_flatcc(trace.read_bytes())
    delegate_calls = kernel_calls = 0
    delegate_ops: dict[str, int] = {}
    for run in dump.run_data:
        for event in run.events or []:
            profile = event.profile_event
            if profile is None:
                continue
            if profile.name == "DELEGATE_CALL":
                delegate_calls += 1
            elif profile.name and profile.name.startswith("native_call_"):
                kernel_calls += 1
            elif profile.name is None and profile.delegate_debug_id_str:
                op = profile.delegate_debug_id_str.split(" #")[0]
                delegate_ops[op] = delegate_ops.get(op, 0) + 1
    return {"delegate_calls": delegate_calls, "portable_kernel_calls": kernel_calls,
            "delegate_operators": dict(sorted(delegate_ops.items(), key=lambda kv: -kv[1])[:12]),
            "delegate_operator_events": sum(delegate_ops.values())}


def traced_forward(et_runtime: ModuleType, torch: ModuleType, pte: Path) -> Trace:
    """etdump_evidence in a scratch folder; a build without ETDump support is evidence too (an error)."""
    import tempfile

    try:
        with tempfile.TemporaryDirectory(prefix="manualqa-etdump-") as tmp:
            return etdump_evidence(et_runtime, torch, pte, Path(tmp))
    except Exception as exc:  # noqa: BLE001 - gate 2 reports it instead of crashing
        return {"error": f"{type(exc).__name__}: {exc}"}
