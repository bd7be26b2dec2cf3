"""Request bodies, validated by msgspec before a handler runs (bad input -> 400 with details)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from gateway.records.keys import NAME_PATTERN as KEY_NAME_PATTERN

Question = Annotated[str, msgspec.Meta(min_length=1, max_length=2000)]
ManualRef = Annotated[str, msgspec.Meta(min_length=1, max_length=300)]


class AskRequest(msgspec.Struct, forbid_unknown_fields=True):
    question: Question
    manuals: Annotated[list[ManualRef], msgspec.Meta(max_length=50)] | None = None
    stream: bool = False
    mode: Literal["generate", "extractive"] | None = None
    max_tokens: Annotated[int, msgspec.Meta(ge=1, le=2048)] | None = None


class SearchRequest(msgspec.Struct, forbid_unknown_fields=True):
    query: Question
    k: Annotated[int, msgspec.Meta(ge=1, le=50)] = 5
    manuals: Annotated[list[ManualRef], msgspec.Meta(max_length=50)] | None = None
    version: Annotated[str, msgspec.Meta(min_length=1, max_length=100)] | None = None


class FeedbackRequest(msgspec.Struct, forbid_unknown_fields=True):
    thumbs: Literal[-1, 1]
    comment: Annotated[str, msgspec.Meta(max_length=2000)] | None = None


class ContentPart(msgspec.Struct):
    """One part of an OpenAI message whose content is an array; only "text" parts carry a question."""

    type: Annotated[str, msgspec.Meta(min_length=1, max_length=32)]
    text: Annotated[str, msgspec.Meta(max_length=20000)] | None = None


class ChatMessage(msgspec.Struct):
    role: Annotated[str, msgspec.Meta(min_length=1, max_length=32)]
    content: (Annotated[str, msgspec.Meta(max_length=20000)]
              | Annotated[list[ContentPart], msgspec.Meta(max_length=50)] | None) = None


class StreamOptions(msgspec.Struct):
    include_usage: bool = False


class ChatCompletionRequest(msgspec.Struct):
    """OpenAI's chat request. Sampling fields are accepted and ignored (the deployment profile
    decides them); what the gateway cannot do (n > 1, tools) is refused, not silently dropped."""

    messages: Annotated[list[ChatMessage], msgspec.Meta(min_length=1, max_length=100)]
    model: Annotated[str, msgspec.Meta(max_length=200)] | None = None
    stream: bool = False
    stream_options: StreamOptions | None = None
    max_tokens: Annotated[int, msgspec.Meta(ge=1, le=2048)] | None = None
    max_completion_tokens: Annotated[int, msgspec.Meta(ge=1, le=2048)] | None = None
    temperature: float | None = None
    top_p: float | None = None
    n: int | None = None
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    user: str | None = None


class KeyCreateRequest(msgspec.Struct, forbid_unknown_fields=True):
    name: Annotated[str, msgspec.Meta(pattern=KEY_NAME_PATTERN)]  # the library's rule, stated in the schema
    role: Literal["reader", "admin"] = "reader"


class AnswerModeRequest(msgspec.Struct, forbid_unknown_fields=True):
    mode: Literal["generate", "extractive"]


class TitleRequest(msgspec.Struct, forbid_unknown_fields=True):
    """A manual's display title (gateway.records.titles); at most 200 printable characters."""

    title: str
