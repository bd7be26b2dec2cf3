"""What `/v1/chat/completions` sends back: one `Reply`, as a JSON completion or as OpenAI's chunk stream.

A stream carries exactly the text the JSON reply carries (the answer, then its "Sources:" footer; quoted
evidence says it is not a checked answer),
in every answer mode: a chat window cannot take back what it has shown, and in generate mode the
model's draft loses the sentences its passages do not back only once it has ended. So the content
goes out once the answer is settled; until then the stream sends SSE comment lines (ignored by
clients, kept by proxies that close silent connections). The technician page and `/api/v1/ask`
still stream the draft live, with the evidence first.

`usage` counts the tokens the generation backend read and wrote for the answer; where no model
took part (extractive mode, not found, a client's housekeeping request) it counts none and its
`counted` field says so ("none", beside "model"), so that zeros never pass for a free answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from typing import Literal

import msgspec

from gateway.answer.answer_texts import say
from gateway.answer.events import AnswerEvent, Final

MODEL_ID = "manualqa"
KEEPALIVE_S = 5.0  # a comment line when nothing was sent for this long (proxies time out at 60 s)


class Reply(msgspec.Struct):
    """One completion's content and what comes with it, as both reply shapes send it."""

    text: str  # the message content: the answer and its Sources footer
    finish: Literal["stop", "length"] = "stop"
    citations: list[Mapping[str, object]] = msgspec.field(default_factory=list)
    manualqa: dict[str, object] = msgspec.field(default_factory=dict)
    usage: dict[str, object] = msgspec.field(default_factory=lambda: uncounted())


# Quoted sentences read like an answer in a chat window that shows no outcome badge; the technician page
# says the same above them (tech.evidence_title). After the quote, so that the answer still comes first.
# In the question's language (gateway.answer.answer_texts); EVIDENCE_NOTE is the English one.
EVIDENCE_NOTE = "\n\n" + say("evidence_note", "")


def rows(value: object) -> list[Mapping[str, object]]:
    """An answer's list of JSON objects (citations, passages) as such; [] for anything else."""
    return [row for row in value if isinstance(row, Mapping)] if isinstance(value, list) else []


def sources_footer(citations: Sequence[Mapping[str, object]], question: str = "") -> str:
    """The cited pages under the answer, in the question's language ("Sources:", "Quellen:", "来源：")."""
    if not citations:
        return ""
    lines = [f"[{c['n']}] {c['title']} p.{c['page']}"
             + (" " + say("printed", question, label=c["page_label"]) if c.get("page_label") else "")
             + (" " + say("ocr", question) if c.get("source") == "ocr" else "") for c in citations]
    return "\n\n" + say("sources", question) + "\n" + "\n".join(lines)


def absolute_citations(citations: list[Mapping[str, object]], base_url: str) -> list[Mapping[str, object]]:
    """Citations whose pdf_url an integrator's tool can open as it is (relative to this request's host)."""
    base = base_url.rstrip("/")
    return [{**c, "pdf_url": base + url} if (url := str(c.get("pdf_url", ""))).startswith("/") else c
            for c in citations]


def uncounted() -> dict[str, object]:
    """No model took part: no tokens to count, and the reply says so."""
    return {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0, "counted": "none"}


def usage_of(result: Mapping[str, object]) -> dict[str, object]:
    """The backend's own counts where a model ran (its stats come with `output_tokens`), else none."""
    timings = result.get("timings")
    output = timings.get("output_tokens") if isinstance(timings, Mapping) else None
    if not isinstance(output, int | float | str):
        return uncounted()
    prompt_tokens = timings.get("prompt_tokens") if isinstance(timings, Mapping) else None
    prompt = int(prompt_tokens) if isinstance(prompt_tokens, int | float | str) and prompt_tokens else 0
    output = int(output)
    return {"prompt_tokens": prompt, "completion_tokens": output, "total_tokens": prompt + output,
            "counted": "model"}


def closest_footer(passages: list[Mapping[str, object]], limit: int = 3, question: str = "") -> str:
    """A refusal's "closest passages" as its text says they are listed: a chat client shows no cards."""
    shown = [p for p in passages if p.get("title") or p.get("manual")][:limit]
    if not shown:
        return ""
    lines = [f"[{i}] {p.get('title') or p.get('manual')} p.{p.get('page')}" for i, p in enumerate(shown, 1)]
    return "\n\n" + say("closest", question) + "\n" + "\n".join(lines)


def answer_reply(result: Mapping[str, object], base_url: str) -> Reply:
    """The reply to a question (AnswerResult.to_dict()): the answer, its Sources footer (a refusal: its
    closest passages), absolute citations and provenance."""
    citations = absolute_citations(rows(result.get("citations")), base_url)
    question = str(result.get("question") or "")  # the footer speaks the question's language, as the answer
    footer = sources_footer(citations, question) or (closest_footer(rows(result.get("passages")), question=question)
                                                     if result.get("outcome") == "not_found" else "")
    if result.get("outcome") == "evidence_only" and result.get("answer"):
        footer = "\n\n" + say("evidence_note", question) + footer
    flags = result.get("flags")
    return Reply(text=str(result.get("answer") or "") + footer,
                 finish="length" if isinstance(flags, list) and "cut_at_max_tokens" in flags else "stop",
                 citations=citations, usage=usage_of(result),
                 manualqa={"answer_id": result["id"], "outcome": result["outcome"],
                           "index_version": result.get("index_version"), "chain_id": result.get("chain_id")})


def completion(completion_id: str, reply: Reply) -> dict[str, object]:
    """The non-streamed `chat.completion` object."""
    return {"id": completion_id, "object": "chat.completion", "created": int(time.time()), "model": MODEL_ID,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": reply.text},
                         "finish_reason": reply.finish}],
            "usage": reply.usage, "citations": reply.citations, "manualqa": reply.manualqa}


def _chunk(completion_id: str, delta: dict[str, str] | None, finish: str | None = None,
           **extra: object) -> dict[str, str | None]:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    body = {"id": completion_id, "object": "chat.completion.chunk", "created": int(time.time()),
            "model": MODEL_ID, "choices": choices, **extra}
    return {"data": json.dumps(body, default=str)}


async def reply_chunks(completion_id: str, replies: AsyncGenerator[Reply | None, None],
                       include_usage: bool) -> AsyncIterator[dict[str, str | None]]:
    """OpenAI's stream: the role, a comment while `replies` yields None (still working), the content,
    the finish chunk (with citations and provenance), then (include_usage) a usage chunk and [DONE]."""
    nousage: dict[str, None] = {"usage": None} if include_usage else {}
    yield _chunk(completion_id, {"role": "assistant", "content": ""}, **nousage)
    sent = False
    try:
        async for reply in replies:  # read to its end: the answer's stream closes by itself after Final
            if reply is None or sent:
                if not sent:
                    yield {"comment": "working", "data": None}  # no data line: clients skip it whole
                continue
            sent = True
            if reply.text:
                yield _chunk(completion_id, {"content": reply.text}, **nousage)
            yield _chunk(completion_id, {}, reply.finish, citations=reply.citations, manualqa=reply.manualqa,
                         **nousage)
            if include_usage:
                yield _chunk(completion_id, None, usage=reply.usage)
    finally:  # a client that left: the answer is cancelled now, not when the collector finds it
        await replies.aclose()
    yield {"data": "[DONE]"}


async def once(reply: Reply) -> AsyncGenerator[Reply | None, None]:
    """A reply known at once (a client's housekeeping request), as reply_chunks reads one."""
    yield reply


async def settled(events: AsyncIterator[AnswerEvent], base_url: str,
                  keepalive_s: float = KEEPALIVE_S) -> AsyncGenerator[Reply | None, None]:
    """The answer's Reply once its Final event comes; None each keepalive_s until then.

    Leaving early (the client went away) cancels the pending read, which ends the answer's stream
    and so cancels the answer (gateway.web.bridge.stream_events).
    """
    loop = asyncio.get_running_loop()
    quiet_since = loop.time()  # the model's tokens are not sent: they do not count as words on the wire
    pending: asyncio.Future[AnswerEvent] | None = None
    try:
        while True:
            pending = asyncio.ensure_future(anext(events))
            while True:
                left = keepalive_s - (loop.time() - quiet_since)
                if (await asyncio.wait({pending}, timeout=max(0.0, left)))[0]:
                    break
                yield None
                quiet_since = loop.time()
            try:
                event = pending.result()
            except StopAsyncIteration:
                return
            if isinstance(event, Final):
                yield answer_reply(event.result.to_dict(), base_url)
    finally:
        if pending is not None and not pending.done():  # the cancel ends the events where they wait
            pending.cancel()
            with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                await pending
        if isinstance(events, AsyncGenerator):
            await events.aclose()
