"""An upstream OpenAI-compatible server (llama-server, llama-cpp-python, vLLM, Ollama) over HTTP.

For sites that outgrow the gateway: generation streams from /v1/chat/completions (SSE); the
artifact chain is what the server says about itself (its model list, and llama-server's /props).

The HTTP client, load()/unload(), the model list, /props, count_tokens and context_length are
OpenAIUpstream's, the base class in runtimes.openai.upstream; this module keeps generation, the
artifact chain and gate 2.
"""

from __future__ import annotations

import hashlib
import json
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
    as_int,
    json_table,
    recorded_generation,
)
from runtimes.openai.upstream import HTTPX_INSTALL_HINT, OpenAIUpstream, _httpx, _why


class OpenAIRuntime(OpenAIUpstream):
    backend = "openai"
    remote = True
    install_hint = HTTPX_INSTALL_HINT
    distributions = {"httpx": "httpx"}

    # -- generation ----------------------------------------------------------------------------
    def stream(
        self,
        messages: list[dict[str, str]],
        config: GenerationConfig,
        cancel: threading.Event | None = None,
    ) -> Iterator[str | GenerationStats]:
        if not self._gen_lock.acquire(timeout=max(config.timeout_s, 0.001)):
            raise GenerationError("the openai runtime is busy with another generation")
        try:
            yield from self._generate(messages, config, cancel)
        finally:
            self._gen_lock.release()

    def _generate(
        self, messages: list[dict[str, str]], config: GenerationConfig, cancel: threading.Event | None
    ) -> Iterator[str | GenerationStats]:
        transport = _httpx()
        self._cancel.clear()
        body: dict[str, object] = {
            "model": self.model, "messages": messages, "stream": True, "max_tokens": config.max_tokens,
            "temperature": config.temperature, "top_p": config.top_p, "top_k": config.top_k,
            "repeat_penalty": config.repeat_penalty, "seed": config.seed,
            "stream_options": {"include_usage": True},
        }
        if config.stop:
            body["stop"] = list(config.stop)
        started = time.perf_counter()
        deadline = started + config.timeout_s
        first = last = None
        pieces, reason, usage = 0, "stop", None
        try:
            with self._http().stream(
                "POST", f"{self.base_url}/chat/completions", json=body,
                timeout=self._timeout(min(self.timeout_s, config.timeout_s)),
            ) as resp:
                if resp.status_code != 200:
                    resp.read()
                    raise GenerationError(f"upstream answered HTTP {resp.status_code}: {resp.text[:300]}")
                for line in resp.iter_lines():
                    if self._cancel.is_set() or (cancel is not None and cancel.is_set()):
                        reason = "cancelled"
                        break  # leaving the block closes the stream; the server sees the disconnect
                    if time.perf_counter() > deadline:
                        reason = "timeout"
                        break
                    if not line.startswith("data:"):
                        continue
                    payload = line[5:].strip()
                    if payload == "[DONE]":
                        break
                    event = _parse_event(payload)
                    usage = json_table(event.get("usage"), "a stream event's usage") or usage
                    for choice in _list(event.get("choices")):
                        choice = json_table(choice, "a stream event's choice")
                        piece = json_table(choice.get("delta"), "a stream event's delta").get("content")
                        if piece:
                            last = time.perf_counter()
                            first = first or last
                            pieces += 1
                            yield str(piece)
                        if choice.get("finish_reason") == "length":
                            reason = "length"
        except transport.TimeoutException:
            reason = "timeout"
        except transport.HTTPError as exc:
            raise GenerationError(f"upstream {self.base_url} failed mid-generation: {_why(exc)}") from exc
        end = time.perf_counter()
        if usage:
            prompt, output = as_int(usage.get("prompt_tokens", 0)), as_int(usage.get("completion_tokens", pieces))
        else:  # servers that do not report usage while streaming: one content chunk per token
            joined = "\n".join(m.get("content", "") for m in messages)
            prompt = self.count_tokens(joined) + 4 * len(messages)  # + role markers, roughly
            output = pieces
        tps = (output - 1) / (last - first) if first and last and last > first and output > 1 else None
        yield GenerationStats(
            prompt_tokens=prompt, output_tokens=output,
            ttft_ms=None if first is None else (first - started) * 1000, decode_tps=tps,
            total_ms=(end - started) * 1000, stop_reason=reason,
            backend_perf={"usage": "reported" if usage else "estimated", "content_chunks": pieces},
        )

    # -- description and gate 2 ----------------------------------------------------------------
    def describe(self) -> ArtifactChain:
        if self._chain is not None:
            return self._chain
        if not self.model_entry:
            raise RuntimeUnavailable("the openai runtime is not loaded; call load() first")
        entry = self.model_entry
        source: dict[str, object] = {k: entry[k] for k in ("id", "owned_by", "created") if k in entry}
        if entry.get("meta"):
            source["meta"] = entry["meta"]
        server: dict[str, object] = {"base_url": self.base_url, "props_endpoint": self.props is not None}
        tokenizer: dict[str, object] = {}
        if self.props:
            for key in ("model_path", "build_info", "total_slots", "modalities"):
                if key in self.props:
                    server[key] = self.props[key]
            template = self.props.get("chat_template")
            if isinstance(template, str):
                tokenizer["chat_template_sha256"] = hashlib.sha256(template.encode("utf-8")).hexdigest()
        self._chain = ArtifactChain({
            "source": source,
            "backend": self.backend,
            "runtime": server,
            "tokenizer": tokenizer,
            "context": {"n_ctx": self.context_length},
            "generation": recorded_generation(self.options),
            "artifact": {"model": self.model, "base_url": self.base_url},
        })
        return self._chain

    def verify_backend(self) -> GateCheck:
        started = time.perf_counter()
        try:
            models = [str(m["id"]) for m in self._list_models()]
        except RuntimeUnavailable as exc:
            return GateCheck(2, False, str(exc), {"base_url": self.base_url})
        evidence: dict[str, object] = {"base_url": self.base_url, "models": models, "model": self.model,
                    "latency_ms": round((time.perf_counter() - started) * 1000, 1)}
        if self.model not in models:
            return GateCheck(2, False, f"upstream {self.base_url} no longer serves {self.model!r}", evidence)
        return GateCheck(2, True, f"upstream {self.base_url} reachable and serving {self.model!r}", evidence)


def _list(value: object) -> list[object]:
    """A JSON array the server may leave out (or send as null): [] then."""
    if not value:
        return []
    if not isinstance(value, list):
        raise TypeError(f"a stream event's choices are not a JSON array: {value!r:.200}")
    return value


def _parse_event(payload: str) -> dict[str, object]:
    try:
        event = json.loads(payload)
    except ValueError as exc:
        raise GenerationError(f"upstream sent a malformed stream event: {payload[:200]!r}") from exc
    if isinstance(event, dict) and event.get("error"):
        raise GenerationError(f"upstream reported an error mid-stream: {event['error']}")
    return event if isinstance(event, dict) else {}
