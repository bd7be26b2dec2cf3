"""The `rkllm` backend: Rockchip's RKLLM runtime on the RK3588/RK3576/RK3562 NPU, behind the contract.

Profile options (all optional except runtime_version):
  runtime_version      the locked RKLLM runtime version ("1.2.3"); picks the struct layouts
  lib_path             librkllmrt.so (else env RKLLM_LIB, ldconfig, /usr/lib/librkllmrt.so)
  max_context_len      4096 by default; must not exceed the model's max_context_limit
  max_new_tokens, n_keep, top_k, top_p, temperature, repeat_penalty   init-time parameters
                       (sampling defaults come from options["generation"], the profile's [generation])
  enabled_cpus (list of CPU ids), base_domain_id, embed_flash           RKLLMExtendParam
  chat_template        {"system": "...{system}...", "prefix": "...", "postfix": "..."} to replace the
                       model's own template via rkllm_set_chat_template (default: the model's own)
  isolate_version_check  True: run rkllm_init once in a child process first (crash-safe ABI check)
  driver_root          root under which the kernel files are read ("/"; tests use a fake tree)
  model_source         where the model came from, for the artifact chain

Loading (rkllm_init with these options), unload, the context limit and the prompt rkllm_run is given
are RKLLMModel's, the base class in runtimes.rkllm.model; this module keeps generation, the artifact
chain and gate 2 (NPU load observed during a smoke prompt).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

from runtimes.base import (
    ArtifactChain,
    Environment,
    GateCheck,
    GenerationConfig,
    GenerationError,
    GenerationStats,
    as_optional_str,
)
from runtimes.hashing import file_sha256
from runtimes.rkllm import layouts as L
from runtimes.rkllm import probe
from runtimes.rkllm.binding import RKLLMBinding
from runtimes.rkllm.model import BYTES_PER_TOKEN, RKLLMModel
from runtimes.rkllm.run_state import RunOutcome


class RKLLMRuntime(RKLLMModel):
    backend = "rkllm"
    native = True  # librkllmrt.so in our address space: runs in a supervised worker (runtimes.supervised)
    install_hint = "install Rockchip's librkllmrt.so (RKLLM runtime) and the rknpu driver on the board"

    @classmethod
    def probe_environment(cls, options: Mapping[str, object]) -> Environment:
        """Library and driver are needed to load; NPU load figures are gate 2's evidence."""
        found = probe.probe_environment(lib_path=as_optional_str(options.get("lib_path")) or None)
        declared = options.get("runtime_version")
        return Environment(
            versions={"rknpu_driver": found.get("driver_version"),
                      "rkllm_runtime": str(declared) if declared else None},
            missing=[m for m in found["missing"] if not m.startswith("NPU load")],
            evidence={"rkllm": found})

    # ------------------------------------------------------------ generation

    @property
    def busy(self) -> bool:
        return self._busy.locked()

    def stream(
        self,
        messages: list[dict[str, str]],
        config: GenerationConfig,
        cancel: threading.Event | None = None,
    ) -> Iterator[str | GenerationStats]:
        if self.binding is None:
            raise GenerationError("the rkllm runtime is not loaded (call load() first)")
        binding = self.binding
        system, prompt = self._prompt(messages)
        est = self.count_tokens(system + prompt)
        ctx = self.context_length
        if est > ctx:
            raise GenerationError(
                f"prompt of about {est} tokens (estimated at {BYTES_PER_TOKEN} bytes per token) exceeds "
                f"max_context_len {ctx} of this RKLLM model; send fewer or shorter passages")
        if not self._busy.acquire(blocking=False):
            raise GenerationError("the rkllm runtime is busy with another generation (one at a time)")
        try:
            yield from self._generate(binding, system, prompt, est, config, cancel)
        finally:
            self._busy.release()

    def _generate(self, binding: RKLLMBinding, system: str, prompt: str, est: int, config: GenerationConfig,
                  cancel: threading.Event | None) -> Iterator[str | GenerationStats]:
        self._cancel.clear()
        text = self._apply_system(system, prompt)
        outcome = RunOutcome()
        failure: list[BaseException] = []
        sampling = {"top_k": config.top_k, "top_p": config.top_p, "temperature": config.temperature,
                    "repeat_penalty": config.repeat_penalty}

        def work() -> None:
            try:
                binding.run(text, outcome, max_new_tokens=config.max_tokens, sampling=sampling)
            except BaseException as exc:  # noqa: BLE001 - handed to the consumer
                failure.append(exc)
            finally:
                outcome.pieces.put(None)

        t0 = time.perf_counter()
        deadline = t0 + config.timeout_s
        first = last = None
        stop_reason, aborted = "stop", False
        held = ""
        hold = max((len(s) for s in config.stop), default=1) - 1
        self._load_samples, next_sample = [], 0.0
        worker = self._worker = threading.Thread(target=work, name="rkllm-run", daemon=True)
        worker.start()
        try:
            while True:
                now = time.perf_counter()
                if now >= next_sample:
                    self._sample_load()
                    next_sample = now + 0.1
                if not aborted and (self._cancel.is_set() or (cancel is not None and cancel.is_set())):
                    binding.abort()
                    stop_reason, aborted = "cancelled", True
                elif not aborted and now > deadline:
                    binding.abort()
                    stop_reason, aborted = "timeout", True
                try:
                    item = outcome.pieces.get(timeout=0.05)
                except queue.Empty:
                    continue
                if item is None:
                    break
                if aborted:
                    continue
                held += item
                cut = min((held.find(s) for s in config.stop if s and s in held), default=-1)
                if cut >= 0:
                    held, stop_reason, aborted = held[:cut], "stop", True
                    binding.abort()
                emit = held if aborted else held[: max(0, len(held) - hold)]
                held = held[len(emit):]
                if emit:
                    first = first or time.perf_counter()
                    last = time.perf_counter()
                    yield emit
        finally:
            if worker.is_alive():  # the consumer left mid-stream: stop the run before releasing the handle
                binding.abort()
            worker.join()
        if not aborted and (self._cancel.is_set() or (cancel is not None and cancel.is_set())):
            stop_reason, aborted = "cancelled", True  # cancel() aborted the run before the loop saw it
        self._sample_load()
        if held and not aborted:
            first = first or time.perf_counter()
            last = time.perf_counter()
            yield held
        if failure:
            raise GenerationError(f"rkllm_run failed: {failure[0]}") from failure[0]
        if outcome.error and stop_reason not in ("cancelled", "timeout"):
            raise GenerationError(f"{outcome.error}; rkllm_run returned {outcome.rc} "
                                  f"(prompt about {est} tokens, max_context_len {self.context_length})")
        if outcome.rc not in (0, None) and stop_reason not in ("cancelled", "timeout"):
            raise GenerationError(f"rkllm_run returned {outcome.rc}")
        if outcome.paused and stop_reason == "stop":
            stop_reason = "length"
        perf = outcome.perf
        n_out = int(perf.get("generate_tokens") or outcome.tokens)
        if stop_reason == "stop" and config.max_tokens and n_out >= config.max_tokens:
            stop_reason = "length"
        decode_tps = None
        if first and last and last > first and n_out > 1:
            decode_tps = (n_out - 1) / (last - first)
        yield GenerationStats(
            prompt_tokens=int(perf.get("prefill_tokens") or est),
            output_tokens=n_out,
            ttft_ms=(first - t0) * 1000 if first else None,
            decode_tps=decode_tps,
            total_ms=(time.perf_counter() - t0) * 1000,
            stop_reason=stop_reason,
            backend_perf={**perf, "rkllm_run_rc": outcome.rc, "callbacks_normal": outcome.tokens},
        )

    def cancel(self) -> None:
        super().cancel()
        if self.binding is not None and self.busy:
            self.binding.abort()

    # ------------------------------------------------------------ provenance and gates

    def _sample_load(self) -> None:
        load, detail = probe.read_npu_load(self.driver_root)
        self._load_detail = detail
        if load is not None:
            self._load_samples.append(load)

    def describe(self) -> ArtifactChain:
        info = self.binding.init_info if self.binding else {}
        lib = self.lib_path or probe.find_library(as_optional_str(self.options.get("lib_path")))[0]
        drv, _ = probe.driver_version(self.driver_root)
        art = Path(self.artifact)
        tpl = self._chat_template()
        data: dict[str, object] = {
            "source": self.options.get("model_source"),
            "conversion": {"tool": "rkllm-toolkit", "version": info.get("rkllm_toolkit_version")},
            "quantization": {"dtype": info.get("model_dtype"),
                             "target_platform": info.get("target_platform")},
            "backend": self.backend,
            "runtime": {
                "rkllm_runtime_version": info.get("rkllm_runtime_version"),
                "declared_runtime_version": self.options.get("runtime_version"),
                "abi_family": L.abi_family(str(self.options.get("runtime_version", ""))),
                "version_confirmed": bool(info.get("rkllm_runtime_version")),
                "rknpu_driver_version": info.get("rknpu_driver_version") or drv,
                "rknpu_driver_version_kernel": drv,
                "platform": info.get("platform"),
                "npu_core_num": info.get("npu_core_num"),
                "max_context_limit": info.get("max_context_limit"),
                "library": lib,
                "library_sha256": file_sha256(lib) if lib and Path(lib).is_file() else None,
            },
            "tokenizer": {"chat_template": "model's own template (applied by the runtime)" if not tpl
                          else {"custom": {k: str(v) for k, v in tpl.items()}}},
            "generation": self._init_params,
            "artifact": {"path": str(art), "sha256": file_sha256(art) if art.is_file() else None,
                         "size": art.stat().st_size if art.is_file() else None},
        }
        return ArtifactChain(data)

    def verify_backend(self) -> GateCheck:
        drv, drv_file = probe.driver_version(self.driver_root)
        evidence: dict[str, object] = {"driver_version": drv, "driver_version_file": drv_file}
        if drv is None:
            return GateCheck(2, False, probe.driver_missing_message(self.driver_root), evidence)
        if self.binding is None:
            return GateCheck(2, False, f"RKNPU driver {drv} present, but the RKLLM model is not loaded",
                             evidence)
        if not self._load_samples:
            # no smoke generation observed yet: run one, sampling the load file while it runs
            try:
                smoke = [{"role": "user", "content": "Say OK."}]
                for _ in self.stream(smoke, GenerationConfig(max_tokens=8)):
                    pass
            except GenerationError as exc:
                return GateCheck(2, False, f"RKNPU driver {drv} present, but the smoke prompt failed: {exc}",
                                 evidence)
        evidence["npu_load_samples"] = self._load_samples[-20:]
        if not self._load_samples:
            return GateCheck(2, False, f"RKNPU driver {drv} present, but NPU load could not be observed "
                             f"during the smoke prompt: {self._load_detail}", evidence)
        peak = {core: max(s.get(core, 0) for s in self._load_samples) for core in self._load_samples[0]}
        evidence["npu_load_peak"] = peak
        if not any(peak.values()):
            return GateCheck(2, False, "NPU load stayed at 0% on every core during the smoke prompt "
                             f"({len(self._load_samples)} samples): the work did not run on the NPU",
                             evidence)
        busiest = max(peak, key=lambda c: peak[c])
        return GateCheck(2, True, f"RKNPU driver {drv}; NPU load up to {peak[busiest]}% ({busiest}) "
                         "during the smoke prompt", evidence)
