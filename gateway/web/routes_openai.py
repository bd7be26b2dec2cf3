"""OpenAI-compatible surface, so that existing clients and SDKs can use the gateway as a model.

The last user message is the question, capped like one (2,000 characters: a longer one is a 400,
never cut); earlier user turns join the retrieval query, so that a follow-up ("and its torque?")
finds the page the conversation is about. The answer comes with its citations both in a
`citations` field (with absolute `pdf_url`s) and as a "Sources:" footer in the text. What the
gateway cannot do is refused the way the OpenAI API refuses it (unknown model: 404
`model_not_found`; `n > 1`, `tools`, non-text content parts: 400), never silently ignored.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Any

from litestar import Controller, Request, get, post
from litestar.params import FromPath, JSONBody

from gateway.answer.events import Final, Text
from gateway.answer.request import AnswerRequest
from gateway.web.bridge import EventStream, final_result, stream_events
from gateway.web.errors import ApiError
from gateway.web.routes_ask import answer_producer, key_name_of, require_ready
from gateway.web.schemas import MAX_QUESTION_CHARS, ChatCompletionRequest, ChatMessage
from gateway.web.security import client_id, reader_guard

MODEL_ID = "manualqa"
EARLIER_TURNS = 2  # earlier user turns that join the retrieval query of a follow-up


def sources_footer(citations: list[dict[str, Any]]) -> str:
    if not citations:
        return ""
    lines = [f"[{c['n']}] {c['title']} p.{c['page']}" + (f" (printed {c['page_label']})" if c.get("page_label") else "")
             + (" (OCR, check the page)" if c.get("source") == "ocr" else "") for c in citations]
    return "\n\nSources:\n" + "\n".join(lines)


def message_text(message: ChatMessage) -> str:
    """The text of a message whose content is a string or an array of parts (text parts only)."""
    if message.content is None or isinstance(message.content, str):
        return (message.content or "").strip()
    texts = []
    for part in message.content:
        if part.type != "text":
            raise ApiError(400, "invalid_request", f"content parts of type {part.type!r} are not supported "
                                                   "by this gateway; send text parts only")
        texts.append(part.text or "")
    return "\n".join(t for t in texts if t.strip()).strip()


def conversation(data: ChatCompletionRequest) -> tuple[str, str | None]:
    """(the question: the last user turn; the retrieval query when earlier user turns exist)."""
    turns = [text for m in data.messages if m.role == "user" and (text := message_text(m))]
    if not turns:
        raise ApiError(400, "invalid_request", "no user message with content in `messages`")
    question = turns[-1]
    if len(question) > MAX_QUESTION_CHARS:  # as /api/v1/ask refuses it: cutting it would answer another question
        raise ApiError(400, "invalid_request", f"the question (the last user message) has {len(question)} "
                                               f"characters; at most {MAX_QUESTION_CHARS}")
    earlier = turns[-1 - EARLIER_TURNS:-1]
    return question, (" ".join([*earlier, question])[: 2 * MAX_QUESTION_CHARS] if earlier else None)


def refuse_unsupported(data: ChatCompletionRequest) -> None:
    if data.model and data.model != MODEL_ID:
        raise ApiError(404, "model_not_found", f"The model {data.model!r} does not exist on this gateway; "
                                               f"it serves {MODEL_ID!r} (GET /v1/models)")
    if data.n not in (None, 1):
        raise ApiError(400, "invalid_request", "n > 1 is not supported: this gateway gives one answer per question")
    if data.tools:
        raise ApiError(400, "invalid_request", "tools (function calling) are not supported by this gateway")


def absolute_citations(citations: list[dict[str, Any]], base_url: str) -> list[dict[str, Any]]:
    """Citations whose pdf_url an integrator's tool can open as it is (relative to this request's host)."""
    base = base_url.rstrip("/")
    return [{**c, "pdf_url": base + c["pdf_url"]} if str(c.get("pdf_url", "")).startswith("/") else c
            for c in citations]


def usage_of(result: dict[str, Any]) -> dict[str, int]:
    timings = result.get("timings") or {}
    usage = {"prompt_tokens": timings.get("prompt_tokens") or 0,
             "completion_tokens": timings.get("output_tokens") or 0}
    usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    return usage


def finish_reason(result: dict[str, Any]) -> str:
    return "length" if "cut_at_max_tokens" in (result.get("flags") or []) else "stop"


def model_card(request: Request[Any, Any, Any]) -> dict[str, Any]:
    gw = request.app.state.gw
    runtime = gw.runtime_if_loaded()
    meta = {"index_version": gw.store.active_id()}
    if runtime is not None:
        meta["chain_id"] = runtime.describe().chain_id
    return {"id": MODEL_ID, "object": "model", "created": 0, "owned_by": "manualqa", "meta": meta}


class OpenAIController(Controller):
    path = "/v1"
    guards = [reader_guard]
    tags = ["openai-compatible"]

    @get("/models", summary="The gateway as one model (OpenAI format)")
    async def models(self, request: Request[Any, Any, Any]) -> dict[str, Any]:
        return {"object": "list", "data": [model_card(request)]}

    @get("/models/{model_id:str}", summary="One model (OpenAI format); 404 for any id but the gateway's")
    async def model(self, request: Request[Any, Any, Any], model_id: FromPath[str]) -> dict[str, Any]:
        if model_id != MODEL_ID:
            raise ApiError(404, "model_not_found", f"The model {model_id!r} does not exist on this gateway; "
                                                   f"it serves {MODEL_ID!r}")
        return model_card(request)

    @post("/chat/completions", summary="Chat completion answered from the manuals", status_code=200)
    async def chat(self, request: Request[Any, Any, Any], data: JSONBody[ChatCompletionRequest]) -> Any:
        state = request.app.state
        require_ready(state)
        refuse_unsupported(data)
        question, search_query = conversation(data)
        state.rate.check(client_id(request))
        produce = answer_producer(state, AnswerRequest(
            question=question, max_tokens=data.max_completion_tokens or data.max_tokens, client="openai",
            key_name=key_name_of(request), search_query=search_query))
        completion_id = "chatcmpl-" + str(int(time.time() * 1000))
        base = str(request.base_url)
        if data.stream:
            include_usage = bool(data.stream_options and data.stream_options.include_usage)
            return EventStream(_chunks(produce, completion_id, base, include_usage),
                               headers={"Cache-Control": "no-store"})
        result = (await final_result(produce)).to_dict()
        citations = absolute_citations(result.get("citations") or [], base)
        text = (result.get("answer") or "") + sources_footer(citations)
        return {"id": completion_id, "object": "chat.completion", "created": int(time.time()),
                "model": MODEL_ID,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                             "finish_reason": finish_reason(result)}],
                "usage": usage_of(result), "citations": citations, "manualqa": _manualqa(result)}


def _manualqa(result: dict[str, Any]) -> dict[str, Any]:
    return {"answer_id": result["id"], "outcome": result["outcome"], "index_version": result.get("index_version"),
            "chain_id": result.get("chain_id")}


def _chunk(completion_id: str, delta: dict[str, Any] | None, finish: str | None = None,
           **extra: Any) -> dict[str, str]:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    body = {"id": completion_id, "object": "chat.completion.chunk", "created": int(time.time()),
            "model": MODEL_ID, "choices": choices, **extra}
    return {"data": json.dumps(body, default=str)}


async def _chunks(produce: Any, completion_id: str, base: str, include_usage: bool) -> AsyncIterator[dict[str, str]]:
    """OpenAI's stream: role, content pieces, the finish chunk, then (include_usage) a usage chunk."""
    nousage = {"usage": None} if include_usage else {}
    yield _chunk(completion_id, {"role": "assistant", "content": ""}, **nousage)
    async for event in stream_events(produce):
        if isinstance(event, Text):
            yield _chunk(completion_id, {"content": event.text}, **nousage)
        elif isinstance(event, Final):
            result = event.result.to_dict()
            citations = absolute_citations(result.get("citations") or [], base)
            footer = sources_footer(citations)
            if footer:
                yield _chunk(completion_id, {"content": footer}, **nousage)
            yield _chunk(completion_id, {}, finish_reason(result), citations=citations,
                         manualqa=_manualqa(result), **nousage)
            if include_usage:
                yield _chunk(completion_id, None, usage=usage_of(result))
    yield {"data": "[DONE]"}
