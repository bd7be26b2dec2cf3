"""OpenAI-compatible surface, so that existing clients and SDKs can use the gateway as a model.

The last user message is the question; the answer comes with its citations both in a
`citations` field and as a "Sources:" footer in the text.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Any

from litestar import Controller, Request, get, post

from gateway.web.bridge import EventStream, stream_events
from gateway.web.errors import ApiError
from gateway.web.routes_ask import answer_producer, key_name_of, require_ready
from gateway.web.schemas import ChatCompletionRequest
from gateway.web.security import client_id, reader_guard

MODEL_ID = "manualqa"


def sources_footer(citations: list[dict[str, Any]]) -> str:
    if not citations:
        return ""
    lines = [f"[{c['n']}] {c['title']} p.{c['page']}" for c in citations]
    return "\n\nSources:\n" + "\n".join(lines)


def _question(data: ChatCompletionRequest) -> str:
    for message in reversed(data.messages):
        if message.role == "user" and message.content and message.content.strip():
            return message.content.strip()[:2000]
    raise ApiError(400, "invalid_request", "no user message with content in `messages`")


class OpenAIController(Controller):
    path = "/v1"
    guards = [reader_guard]
    tags = ["openai-compatible"]

    @get("/models", summary="The gateway as one model (OpenAI format)")
    async def models(self, request: Request[Any, Any, Any]) -> dict[str, Any]:
        gw = request.app.state.gw
        runtime = gw.runtime_if_loaded()
        meta = {"index_version": gw.store.active_id()}
        if runtime is not None:
            meta["chain_id"] = runtime.describe().chain_id
        return {"object": "list", "data": [{"id": MODEL_ID, "object": "model", "created": 0,
                                            "owned_by": "manualqa", "meta": meta}]}

    @post("/chat/completions", summary="Chat completion answered from the manuals", status_code=200)
    async def chat(self, request: Request[Any, Any, Any], data: ChatCompletionRequest) -> Any:
        state = request.app.state
        require_ready(state)
        question = _question(data)
        state.rate.check(client_id(request))
        produce = answer_producer(state, question, None, None, data.max_tokens, "api", key_name_of(request))
        completion_id = "chatcmpl-" + str(int(time.time() * 1000))
        if data.stream:
            return EventStream(_chunks(produce, completion_id), headers={"Cache-Control": "no-store"})
        result = None
        async for event in stream_events(produce):
            if event["type"] == "final":
                result = event["result"].to_dict()
        assert result is not None
        text = (result.get("answer") or "") + sources_footer(result.get("citations") or [])
        usage = {"prompt_tokens": result["timings"].get("prompt_tokens") or 0,
                 "completion_tokens": result["timings"].get("output_tokens") or 0}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        return {"id": completion_id, "object": "chat.completion", "created": int(time.time()),
                "model": MODEL_ID,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                             "finish_reason": "stop"}],
                "usage": usage, "citations": result.get("citations") or [],
                "manualqa": {"answer_id": result["id"], "outcome": result["outcome"],
                             "index_version": result.get("index_version"),
                             "chain_id": result.get("chain_id")}}


def _chunk(completion_id: str, delta: dict[str, Any], finish: str | None = None,
           **extra: Any) -> dict[str, str]:
    body = {"id": completion_id, "object": "chat.completion.chunk", "created": int(time.time()),
            "model": MODEL_ID, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}
    return {"data": json.dumps(body, default=str)}


async def _chunks(produce: Any, completion_id: str) -> AsyncIterator[dict[str, str]]:
    yield _chunk(completion_id, {"role": "assistant", "content": ""})
    async for event in stream_events(produce):
        if event["type"] == "text":
            yield _chunk(completion_id, {"content": event["text"]})
        elif event["type"] == "final":
            result = event["result"].to_dict()
            citations = result.get("citations") or []
            footer = sources_footer(citations)
            if footer:
                yield _chunk(completion_id, {"content": footer})
            yield _chunk(completion_id, {}, "stop", citations=citations,
                         manualqa={"answer_id": result["id"], "outcome": result["outcome"],
                                   "index_version": result.get("index_version"),
                                   "chain_id": result.get("chain_id")})
    yield {"data": "[DONE]"}
