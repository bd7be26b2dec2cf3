"""OpenAI-compatible surface, so that existing clients and SDKs can use the gateway as a model.

The last user message is the question, capped like one (2,000 characters: a longer one is a 400,
never cut); earlier user turns join the retrieval query, so that a follow-up ("and its torque?")
finds the page the conversation is about. The answer comes with its citations both in a
`citations` field (with absolute `pdf_url`s) and as a "Sources:" footer in the text; streamed or
not, the text is the same (gateway.web.openai_replies). What the gateway cannot do is refused the
way the OpenAI API refuses it (unknown model: 404 `model_not_found`; `n > 1`, non-text content
parts: 400). Tools offered (`tools`, `tool_choice`, `functions`) are ignored, not refused: chat
clients such as Open WebUI attach theirs to every request, and the answer simply calls none. A chat
client's own housekeeping requests (a title, tags, follow-ups) are answered without the manuals
(gateway.web.chat_tasks).
"""

from __future__ import annotations

import time
from typing import Any

from litestar import Controller, get, post
from litestar.params import FromPath, JSONBody

from gateway.answer.request import AnswerRequest
from gateway.web.bridge import EventStream, final_result, stream_events
from gateway.web.chat_tasks import ClientTask, client_task
from gateway.web.errors import ApiError
from gateway.web.openai_replies import (
    MODEL_ID,
    Reply,
    answer_reply,
    completion,
    once,
    reply_chunks,
    settled,
    sources_footer,
)
from gateway.web.routes_ask import answer_producer, key_name_of, require_ready
from gateway.web.schemas import MAX_QUESTION_CHARS, ChatCompletionRequest, ChatMessage
from gateway.web.security import AppRequest, client_id, reader_guard, services_of

__all__ = ["EARLIER_TURNS", "OpenAIController", "sources_footer"]

EARLIER_TURNS = 2  # earlier user turns that join the retrieval query of a follow-up


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


def task_reply(task: ClientTask) -> Reply:
    """A housekeeping request's reply: nothing searched, nothing logged, no tokens."""
    return Reply(text=task.reply, manualqa={"task": task.kind, "client_app": task.client,
                                            "answer_id": None, "outcome": None})


def model_card(request: AppRequest) -> dict[str, object]:
    gw = services_of(request)
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
    async def models(self, request: AppRequest) -> dict[str, object]:
        return {"object": "list", "data": [model_card(request)]}

    @get("/models/{model_id:str}", summary="One model (OpenAI format); 404 for any id but the gateway's")
    async def model(self, request: AppRequest, model_id: FromPath[str]) -> dict[str, object]:
        if model_id != MODEL_ID:
            raise ApiError(404, "model_not_found", f"The model {model_id!r} does not exist on this gateway; "
                                                   f"it serves {MODEL_ID!r}")
        return model_card(request)

    @post("/chat/completions", summary="Chat completion answered from the manuals", status_code=200)
    async def chat(self, request: AppRequest, data: JSONBody[ChatCompletionRequest]) -> Any:
        state = request.app.state
        refuse_unsupported(data)
        completion_id = "chatcmpl-" + str(int(time.time() * 1000))
        include_usage = bool(data.stream_options and data.stream_options.include_usage)
        task = client_task(data.messages)  # before the question's checks: its prompt holds the whole chat
        if task is not None:
            reply = task_reply(task)
            if data.stream:
                return EventStream(reply_chunks(completion_id, once(reply), include_usage),
                                   headers={"Cache-Control": "no-store"})
            return completion(completion_id, reply)
        require_ready(state)
        question, search_query = conversation(data)
        state.rate.check(client_id(request))
        produce = answer_producer(state, AnswerRequest(
            question=question, max_tokens=data.max_completion_tokens or data.max_tokens, client="openai",
            key_name=key_name_of(request), search_query=search_query))
        base = str(request.base_url)
        if data.stream:
            replies = settled(stream_events(produce), base)
            return EventStream(reply_chunks(completion_id, replies, include_usage),
                               headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})
        result = (await final_result(produce)).to_dict()
        return completion(completion_id, answer_reply(result, base))
