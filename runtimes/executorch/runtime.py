"""ExecuTorch: a .pte program (XNNPACK delegate, static KV cache) plus its tokenizer and template.

The artifact is the folder deploy/export_executorch.py writes (model.pte, tokenizer.json,
chat_template.jinja, PROVENANCE.json). The program's forward takes input_ids[1, n] and
cache_position[n] and returns logits; its KV cache lives in the program's mutable buffers, so
one call reads the prompt and then one call per token decodes. Sampling, stop strings and the
template are done here in Python. Gate 2 reads which backends the program delegates to from the
.pte itself and whether this executorch build registers XNNPACK, and checks that the delegated
program ran (the runtime refuses to load a program whose delegate is missing).

The program, its tokenizer and template, load()/unload(), the forward call and the token counts are
ExecuTorchModel's, the base class in runtimes.executorch.model; this module keeps generation (the
sampler and stop strings), the artifact chain and gate 2.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

from runtimes.base import (
    ArtifactChain,
    GateCheck,
    GenerationConfig,
    GenerationError,
    GenerationStats,
    RuntimeUnavailable,
    distribution_version,
    recorded_generation,
)
from runtimes.executorch import chain
from runtimes.executorch.model import ET_INSTALL_HINT, ExecuTorchModel
from runtimes.executorch.sampling import Sampler, TextStream


class ExecuTorchRuntime(ExecuTorchModel):
    backend = "executorch"
    native = True  # the ExecuTorch and XNNPACK C++ in our address space: runs in a supervised worker
    install_hint = ET_INSTALL_HINT
    requires = "executorch"  # probe_environment: missing when this one is not installed
    distributions = {"executorch": "executorch", "torch": "torch"}

    # -- generation ----------------------------------------------------------------------------
    def stream(self, messages: list[dict[str, str]], config: GenerationConfig,
               cancel: threading.Event | None = None) -> Iterator[str | GenerationStats]:
        if self._method is None:
            raise GenerationError("the executorch runtime is not loaded; call load() first")
        if not self._gen_lock.acquire(timeout=max(config.timeout_s, 0.001)):
            raise GenerationError("the executorch runtime is busy with another generation")
        try:
            yield from self._generate(messages, config, cancel)
        finally:
            self._gen_lock.release()

    def _generate(self, messages: list[dict[str, str]], config: GenerationConfig,
                  cancel: threading.Event | None) -> Iterator[str | GenerationStats]:
        if self._torch is None or self._tokenizer is None:
            raise GenerationError("the executorch runtime is not loaded; call load() first")
        torch, tokenizer = self._torch, self._tokenizer
        self._cancel.clear()
        started = time.perf_counter()
        deadline = started + config.timeout_s
        ids = self._prompt_ids(messages)
        if len(ids) >= self.max_seq_len:
            raise GenerationError(f"prompt of {len(ids)} tokens does not fit the program's "
                                  f"{self.max_seq_len}-token KV cache")

        def stopped() -> str:
            if self._cancel.is_set() or (cancel is not None and cancel.is_set()):
                return "cancelled"
            return "timeout" if time.perf_counter() > deadline else ""

        reason = ""
        if self.prefill_whole:
            logits = self._forward(ids, 0)
        else:
            for pos, token in enumerate(ids):
                logits = self._forward([token], pos)
                if (reason := stopped()):
                    break
        sampler = Sampler(torch, config, list(ids))
        text = TextStream(tokenizer, config.stop)
        budget = min(config.max_tokens, self.max_seq_len - len(ids))
        output = 0
        first = last = None
        while not reason:
            token = sampler.next(logits)
            if token in self._eos:
                reason = "stop"
                break
            output += 1
            piece, hit_stop = text.push(token)
            if piece:
                last = time.perf_counter()
                first = first or last
                yield piece
            if hit_stop:
                reason = "stop"
            elif output >= budget:
                reason = "length"
            elif not (reason := stopped()):
                logits = self._forward([token], len(ids) + output - 1)
        if (tail := text.flush()) and reason not in ("cancelled", "timeout"):
            last = time.perf_counter()
            first = first or last
            yield tail
        tps = (output - 1) / (last - first) if first and last and last > first and output > 1 else None
        yield GenerationStats(
            prompt_tokens=len(ids), output_tokens=output,
            ttft_ms=None if first is None else (first - started) * 1000, decode_tps=tps,
            total_ms=(time.perf_counter() - started) * 1000, stop_reason=reason,
            backend_perf={"forward_calls": self.forward_calls, "prefill_whole": self.prefill_whole})

    # -- description and gate 2 ----------------------------------------------------------------
    def _runtime_facts(self) -> dict[str, object]:
        registry = self._et.Runtime.get().backend_registry if self._et is not None else None
        return {"library": "executorch", "executorch": distribution_version("executorch"),
                "torch": distribution_version("torch"), "n_threads": self.n_threads,
                "registered_backends": sorted(registry.registered_backend_names) if registry else []}

    def describe(self) -> ArtifactChain:
        if self._chain is not None:
            return self._chain
        if self.folder is None or self._tokenizer is None:
            raise RuntimeUnavailable("the executorch runtime is not loaded; call load() first")
        data = chain.chain_data(self.folder, self.hashes, self.provenance, self._runtime_facts(),
                                self.delegates, recorded_generation(self.options), self.context_length,
                                vocab_size=self._tokenizer.get_vocab_size(with_added_tokens=True))
        self._chain = ArtifactChain(data)
        return self._chain

    def verify_backend(self) -> GateCheck:
        if self._method is None or self._et is None:
            return GateCheck(2, False, "the executorch runtime is not loaded")
        forward = self.delegates.get("forward")
        available = bool(self._et.Runtime.get().backend_registry.is_available(chain.XNNPACK))
        evidence: dict[str, object] = {"program": self.delegates, "xnnpack_registered": available,
                                    "forward_calls_since_load": self.forward_calls, "runtime": self._runtime_facts()}
        traced: chain.Trace = {}
        if self.folder and self._torch is not None:
            traced = chain.traced_forward(self._et, self._torch, self.folder / chain.PTE)
        evidence["etdump"] = traced
        if forward is None or chain.XNNPACK not in forward["delegates"] or not forward["delegate_calls"]:
            kernel_calls = forward["kernel_calls"] if forward is not None else 0
            return GateCheck(2, False, "the program delegates nothing to XNNPACK: every operator runs on "
                             f"ExecuTorch's portable kernels ({kernel_calls} kernel calls)",
                             evidence)
        if not available:
            return GateCheck(2, False, "this executorch build has no XnnpackBackend registered", evidence)
        if self.forward_calls == 0:
            return GateCheck(2, False, "the program has not run since load (no smoke generation)", evidence)
        if "error" in traced:
            return GateCheck(2, False, f"ExecuTorch's event trace could not be read: {traced['error']}", evidence)
        if not traced.get("delegate_calls") or not traced.get("delegate_operator_events"):
            return GateCheck(2, False, "the event trace of a forward shows no XNNPACK work "
                             f"({traced.get('portable_kernel_calls', 0)} portable kernel calls)", evidence)
        top = ", ".join(list(traced["delegate_operators"])[:3])
        return GateCheck(2, True, f"XNNPACK delegate ran: {traced['delegate_calls']} delegate calls, "
                         f"{traced['delegate_operator_events']} XNNPACK operator events ({top}) and "
                         f"{traced['portable_kernel_calls']} portable kernel calls in a traced forward; "
                         f"{self.forward_calls} forwards served", evidence)
