"""Request bodies, validated by msgspec before a handler runs (bad input -> 400 with details).

A JSON body must come as JSON: `require_json_body` (the app's before_request hook) refuses another
declared media type (text/plain, a form) with 415 before anything parses it.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from litestar.enums import RequestEncodingType
from litestar.handlers import HTTPRouteHandler

from gateway.records.keys import NAME_PATTERN as KEY_NAME_PATTERN
from gateway.web.errors import ApiError
from gateway.web.security import AppRequest

MAX_QUESTION_CHARS = 2000  # a question: /api/v1/ask, /api/v1/search and a chat's last user message
MAX_TURN_CHARS = 20000  # any other chat message (system prompt, earlier turns, the model's replies)
Question = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_QUESTION_CHARS)]
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
    text: Annotated[str, msgspec.Meta(max_length=MAX_TURN_CHARS)] | None = None


class ChatMessage(msgspec.Struct):
    role: Annotated[str, msgspec.Meta(min_length=1, max_length=32)]
    content: (Annotated[str, msgspec.Meta(max_length=MAX_TURN_CHARS)]
              | Annotated[list[ContentPart], msgspec.Meta(max_length=50)] | None) = None


class StreamOptions(msgspec.Struct):
    include_usage: bool = False


class ChatCompletionRequest(msgspec.Struct):
    """OpenAI's chat request. Sampling fields are accepted and ignored (the deployment profile
    decides them), and so are tools (chat clients attach theirs to every request; the answer calls
    none); what the gateway cannot do (n > 1) is refused, not silently dropped."""

    messages: Annotated[list[ChatMessage], msgspec.Meta(min_length=1, max_length=100)]
    model: Annotated[str, msgspec.Meta(max_length=200)] | None = None
    stream: bool = False
    stream_options: StreamOptions | None = None
    max_tokens: Annotated[int, msgspec.Meta(ge=1, le=2048)] | None = None
    max_completion_tokens: Annotated[int, msgspec.Meta(ge=1, le=2048)] | None = None
    temperature: float | None = None
    top_p: float | None = None
    n: int | None = None
    tools: list[dict[str, object]] | None = None
    tool_choice: str | dict[str, object] | None = None
    user: str | None = None


class KeyCreateRequest(msgspec.Struct, forbid_unknown_fields=True):
    name: Annotated[str, msgspec.Meta(pattern=KEY_NAME_PATTERN)]  # the library's rule, stated in the schema
    role: Literal["reader", "admin"] = "reader"


class AnswerModeRequest(msgspec.Struct, forbid_unknown_fields=True):
    mode: Literal["auto", "generate", "extractive"]


class TitleRequest(msgspec.Struct, forbid_unknown_fields=True):
    """A manual's display title (gateway.records.titles); at most 200 printable characters."""

    title: str


def takes_json(handler: HTTPRouteHandler) -> bool:
    """Whether a route handler's body (its `data` parameter, JSONBody or plain) is JSON."""
    field = handler.parsed_fn_signature.parameters.get("data")
    if field is None:
        return False
    media = getattr(field.kwarg_definition, "media_type", RequestEncodingType.JSON)
    return media == RequestEncodingType.JSON


def is_json_type(content_type: str) -> bool:
    """application/json (any parameters, e.g. charset) or a structured +json type."""
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


async def require_json_body(request: AppRequest) -> None:
    """Refuse a JSON route's body sent as another media type (415), instead of parsing it as JSON.

    Runs after the guards (a caller without a key still gets its 401). A body with no Content-Type
    at all is read as JSON, as before; a form or text/plain body is what a cross-site page can send
    without asking, and what a client sends by mistake (curl -d without -H): neither is a question.
    """
    content_type = request.headers.get("content-type")
    if content_type is None or not takes_json(request.route_handler) or is_json_type(content_type):
        return None
    media = content_type.split(";", 1)[0].strip() or "an empty Content-Type"
    raise ApiError(415, "unsupported_media_type",
                   f"send the body as JSON with Content-Type: application/json, not {media}")
