"""A chat client's housekeeping requests on `/v1`: recognised and answered without the manuals.

Chat front ends send more than the technician's questions to the model they are pointed at: Open
WebUI asks for a chat title, tags and follow-up suggestions after every answer (and, with tools in
its prompt-based mode, which tool to call), LibreChat for a title. Searched as questions they fill
the answer log with prompts nobody asked, cost a retrieval (or a generation) each, and one longer
than a question was refused. They are recognised by the markers of those clients' own prompt
templates and answered at once in the format the client parses: a title made from the user's
first question, and empty tags, follow-ups, queries or tool calls. Nothing is searched or logged.
"""

from __future__ import annotations

import json
import re
from typing import Literal

import msgspec

from gateway.web.schemas import ChatMessage

TaskKind = Literal["title", "tags", "follow_ups", "queries", "tool_calls", "other"]

TITLE_CHARS = 60  # a chat list shows about this much of a title
FALLBACK_TITLE = "Question about the manuals"

# Open WebUI's task templates open with "### Task:" and end with the chat in <chat_history>.
_OWUI_TASK = re.compile(r"^\s*###\s*Task:", re.IGNORECASE | re.MULTILINE)
_OWUI_BODY = re.compile(r"<chat_history>|###\s*Output|JSON format", re.IGNORECASE)
_HISTORY = re.compile(r"<chat_history>(.*?)(?:</chat_history>|\Z)", re.DOTALL | re.IGNORECASE)
_JSON_KEY = re.compile(r'\{\s*"(\w+)"\s*:')
_LIST_KEYS: dict[str, TaskKind] = {"tags": "tags", "follow_ups": "follow_ups", "queries": "queries",
                                   "tool_calls": "tool_calls"}
# LibreChat's title prompt ("Provide a concise, 5-word-or-less title for the conversation ...").
_LIBRECHAT_TITLE = re.compile(r"5-word-or-less title|only return the title itself", re.IGNORECASE)
_LIBRECHAT_USER = re.compile(r"^User:\s*(.*?)(?=^\s*AI:|\Z)", re.DOTALL | re.MULTILINE)
# Open WebUI's prompt-based tool choice is a system message listing the tools.
_TOOL_CHOICE = re.compile(r"Available Tools:", re.IGNORECASE)


class ClientTask(msgspec.Struct, frozen=True):
    """One recognised housekeeping request: what it asks for and the reply it gets."""

    kind: TaskKind
    client: str  # "open-webui" or "librechat"
    reply: str


def _text(message: ChatMessage) -> str:
    """A message's text, any non-text parts left out (a task prompt is text; a question is checked later)."""
    if message.content is None or isinstance(message.content, str):
        return message.content or ""
    return "\n".join(p.text or "" for p in message.content if p.type == "text")


def title_of(question: str) -> str:
    """A chat title from the user's question: its first line, without closing punctuation, cut at a word."""
    line = next((ln.strip() for ln in question.splitlines() if ln.strip()), "")
    line = re.sub(r"\s+", " ", line).strip(" \"'`*#").rstrip("?.!:;, ")
    if len(line) > TITLE_CHARS:
        head = line[:TITLE_CHARS + 1]
        line = (head.rsplit(" ", 1)[0] if " " in head else head[:TITLE_CHARS]).rstrip(",;: ")
    return line or FALLBACK_TITLE


def _first_user_turn(history: str) -> str:
    """The first user turn of the chat as Open WebUI renders it ("USER: ...", one line a message)."""
    for line in history.splitlines():
        head, _, rest = line.partition(":")
        if head.strip().lower() == "user" and rest.strip():
            return rest.strip()
    return ""


def _open_webui(prompt: str) -> ClientTask | None:
    if not (_OWUI_TASK.search(prompt) and _OWUI_BODY.search(prompt)):
        return None
    template, _, _ = prompt.partition("<chat_history>")  # the client's words, not the user's
    history_match = _HISTORY.search(prompt)
    history = history_match.group(1) if history_match else ""
    key_match = _JSON_KEY.search(template)
    key = key_match.group(1) if key_match else None
    if key == "title" or (key is None and re.search(r"\btitle\b", template, re.IGNORECASE)):
        title = title_of(_first_user_turn(history) or history)
        return ClientTask("title", "open-webui", json.dumps({"title": title}) if key else title)
    if key in _LIST_KEYS:
        return ClientTask(_LIST_KEYS[key], "open-webui", json.dumps({key: []}))
    return ClientTask("other", "open-webui", json.dumps({key: ""}) if key else "")


def _librechat(prompt: str) -> ClientTask | None:
    if not _LIBRECHAT_TITLE.search(prompt):
        return None
    _, _, convo = prompt.partition("Conversation:")
    user = _LIBRECHAT_USER.search(convo or prompt)
    return ClientTask("title", "librechat", title_of(user.group(1) if user else ""))


def client_task(messages: list[ChatMessage]) -> ClientTask | None:
    """The housekeeping request these messages make, or None for a question to answer from the manuals.

    The task prompt is the last user message (Open WebUI, LibreChat); Open WebUI's tool choice is a
    system message naming the tools, answered with no tool call.
    """
    if any(m.role == "system" and _TOOL_CHOICE.search(t := _text(m)) and '"tool_calls"' in t for m in messages):
        return ClientTask("tool_calls", "open-webui", json.dumps({"tool_calls": []}))
    last_user = next((_text(m) for m in reversed(messages) if m.role == "user"), "")
    if not last_user.strip():
        return None
    return _open_webui(last_user) or _librechat(last_user)
