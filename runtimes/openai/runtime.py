"""An upstream OpenAI-compatible server (llama-server, llama-cpp-python, vLLM, Ollama) over HTTP.

For sites that outgrow the gateway: generation streams from /v1/chat/completions (SSE); the
artifact chain is what the server says about itself (its model list, and llama-server's /props).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Iterator, Mapping
from types import ModuleType
from typing import TYPE_CHECKING

from runtimes.base import (
    ArtifactChain,
    GateCheck,
    GenerationConfig,
    GenerationError,
    GenerationStats,
    Runtime,
    RuntimeUnavailable,
    as_float,
    as_int,
    json_table,
    recorded_generation,
)

if TYPE_CHECKING:  # imported for real by _httpx(), when the backend is used
    import httpx


def _httpx() -> ModuleType:
    try:
        import httpx
    except ImportError as exc:
        raise RuntimeUnavailable(
            f"the openai backend needs httpx ({exc}); install it with: {OpenAIRuntime.install_hint}"
        ) from exc
    return httpx


def _why(exc: Exception) -> str:
    """A short human reason for a transport failure."""
    text = str(exc) or type(exc).__name__
    low = text.lower()
    if "refused" in low:
        return "connection refused"
    if "timed out" in low or "timeout" in type(exc).__name__.lower():
        return f"no answer in time ({type(exc).__name__})"
    if "name or service not known" in low or "nodename nor servname" in low:
        return "host name not resolvable"
    return text


class OpenAIRuntime(Runtime):
    backend = "openai"
    remote = True
    install_hint = "pip install httpx"
    distributions = {"httpx": "httpx"}

    def __init__(self, artifact: str, options: Mapping[str, object] | None = None) -> None:
        super().__init__(artifact, options)
        self.base_url = str(self.options.get("base_url") or artifact or "http://127.0.0.1:8081/v1").rstrip("/")
        self.model = str(self.options.get("model") or "")
        self.api_key = self.options.get("api_key")
        self.timeout_s = as_float(self.options.get("timeout_s", 120.0))
        self.connect_timeout_s = as_float(self.options.get("connect_timeout_s", 3.0))
        self.server_root = self.base_url[: -len("/v1")] if self.base_url.endswith("/v1") else self.base_url
        self.model_entry: dict[str, object] = {}  # the served model's entry in GET /models
        self.models: list[str] = []
        self.props: dict[str, object] | None = None  # llama-server's GET /props
        self._client: httpx.Client | None = None
        self._chain: ArtifactChain | None = None
        self._tokenize_route: str | None = None  # "", "/extras/tokenize", "/tokenize" once probed
        self._gen_lock = threading.Lock()

    # -- HTTP plumbing -------------------------------------------------------------------------
    def _timeout(self, read_s: float | None = None) -> httpx.Timeout:
        read = self.timeout_s if read_s is None else read_s
        timeout: httpx.Timeout = _httpx().Timeout(read, connect=self.connect_timeout_s)
        return timeout

    def _http(self) -> httpx.Client:
        if self._client is None:
            headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
            self._client = _httpx().Client(headers=headers, timeout=self._timeout(), trust_env=False)
        return self._client

    def _get(self, url: str) -> httpx.Response:
        errors = _httpx().HTTPError
        try:
            return self._http().get(url)
        except errors as exc:
            raise RuntimeUnavailable(f"upstream {self.base_url} not reachable: {_why(exc)}") from exc

    # -- loading -------------------------------------------------------------------------------
    def _list_models(self) -> list[dict[str, object]]:
        resp = self._get(f"{self.base_url}/models")
        if resp.status_code != 200:
            raise RuntimeUnavailable(
                f"upstream {self.base_url} answered HTTP {resp.status_code} to GET /models: {resp.text[:200]}"
            )
        try:
            data = resp.json().get("data", [])
        except (ValueError, AttributeError) as exc:
            raise RuntimeUnavailable(f"upstream {self.base_url}/models did not return a model list") from exc
        return [m for m in data if isinstance(m, dict) and m.get("id")]

    def load(self) -> None:
        entries = self._list_models()
        self.models = [str(m["id"]) for m in entries]
        if not entries:
            raise RuntimeUnavailable(f"upstream {self.base_url} serves no models")
        if not self.model:
            self.model = self.models[0]
        match = [m for m in entries if m["id"] == self.model]
        if not match:
            raise RuntimeUnavailable(
                f"upstream {self.base_url} does not serve model {self.model!r}; "
                f"it serves: {', '.join(self.models)}"
            )
        self.model_entry = match[0]
        resp = self._get(f"{self.server_root}/props")
        self.props = resp.json() if resp.status_code == 200 else None
        self._chain = None

    def unload(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            client.close()

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

    def count_tokens(self, text: str) -> int:
        """The server's tokenizer when it has an endpoint for it; else about 4 characters a token."""
        routes = [self._tokenize_route] if self._tokenize_route is not None else [
            f"{self.server_root}/extras/tokenize", f"{self.server_root}/tokenize"]
        for route in routes:
            if not route:
                break
            try:
                resp = self._http().post(route, json={"input": text, "content": text, "model": self.model})
            except Exception:
                break
            if resp.status_code == 200 and isinstance(resp.json().get("tokens"), list):
                self._tokenize_route = route
                return len(resp.json()["tokens"])
        self._tokenize_route = ""
        return max(1, (len(text) + 3) // 4) if text else 0

    @property
    def context_length(self) -> int:
        if self.options.get("context_length"):
            return as_int(self.options["context_length"])
        props = self.props or {}
        settings = json_table(props.get("default_generation_settings"), "/props default_generation_settings")
        for value in (settings.get("n_ctx"), props.get("n_ctx"),
                      json_table(self.model_entry.get("meta"), "the model's meta").get("n_ctx_train")):
            if value:
                return as_int(value)
        return 2048

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
