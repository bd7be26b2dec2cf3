"""Request bodies, validated by msgspec before a handler runs (bad input -> 400 with details)."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

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


class ChatMessage(msgspec.Struct):
    role: Annotated[str, msgspec.Meta(min_length=1, max_length=32)]
    content: Annotated[str, msgspec.Meta(max_length=20000)] | None = None


class ChatCompletionRequest(msgspec.Struct):
    """OpenAI's chat request; fields the gateway does not use are accepted and ignored."""

    messages: Annotated[list[ChatMessage], msgspec.Meta(min_length=1, max_length=100)]
    model: Annotated[str, msgspec.Meta(max_length=200)] | None = None
    stream: bool = False
    max_tokens: Annotated[int, msgspec.Meta(ge=1, le=2048)] | None = None
    temperature: float | None = None
    top_p: float | None = None
    user: str | None = None
