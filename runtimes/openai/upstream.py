"""The upstream server as OpenAIRuntime holds it between load() and unload(): client, models, /props.

Split out of runtimes.openai.runtime (which keeps generation over SSE, the artifact chain and gate 2):
the HTTP client and its timeouts, the model list the server serves and the one picked, llama-server's
/props, and what is read from the server outside a generation (its tokenizer endpoint, its context
length). `OpenAIUpstream` is OpenAIRuntime's base; nothing builds one alone.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from types import ModuleType
from typing import TYPE_CHECKING

from runtimes.base import (
    ArtifactChain,
    Runtime,
    RuntimeUnavailable,
    as_float,
    as_int,
    json_table,
)

if TYPE_CHECKING:  # imported for real by _httpx(), when the backend is used
    import httpx

HTTPX_INSTALL_HINT = "pip install httpx"


def _httpx() -> ModuleType:
    try:
        import httpx
    except ImportError as exc:
        raise RuntimeUnavailable(
            f"the openai backend needs httpx ({exc}); install it with: {HTTPX_INSTALL_HINT}"
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


class OpenAIUpstream(Runtime):
    """The HTTP client to the upstream server and what it said about itself; OpenAIRuntime's base."""

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

    # -- tokens and context --------------------------------------------------------------------
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
