"""The pipe between the gateway and a backend's worker process: one JSON object per line.

Why lines of JSON: tokens are small and few (tens per second), so framing costs microseconds,
a human can read a captured stream, and a torn last line (the worker died mid-write) is simply
not a message. The worker answers on its own file descriptor, never stdout, so whatever a native
library prints cannot corrupt the stream.

Each message is a msgspec Struct of a tagged union (the tag is "op" for requests, "t" for replies),
so both ends agree on the fields by type, not by string keys. A request with an ``id`` gets
replies with the same id. Dead is never sent: the gateway's reader makes it when the pipe closes.
"""

from __future__ import annotations

import signal
from typing import IO

import msgspec

from runtimes.base import GenerationConfig, GenerationStats

# A worker's CPU time and memory, as the gateway reports them (read from /proc by runtimes.machine).
from runtimes.machine import cpu_seconds as cpu_seconds
from runtimes.machine import peak_rss_bytes as peak_rss_bytes
from runtimes.machine import rss_bytes as rss_bytes

# Attributes of a loaded backend that the worker reports once it is ready (SupervisedRuntime answers them).
FACTS = ("n_threads", "n_threads_batch", "n_gpu_layers", "n_ctx", "n_batch")


# -- gateway -> worker ---------------------------------------------------------------------------
class Request(msgspec.Struct, frozen=True, tag_field="op"):
    """A request to the worker."""


class Init(Request, frozen=True, tag="init"):
    """The first message: what to load (options may be long; argv is not the place)."""

    backend: str
    artifact: str
    options: dict[str, object] = {}  # Profile.runtime_options(): the profile's [options] and its generation


class Count(Request, frozen=True, tag="count"):
    id: int
    text: str


class Stream(Request, frozen=True, tag="stream"):
    id: int
    messages: list[dict[str, str]]
    config: GenerationConfig  # on the wire as its fields (GenerationConfig.to_dict())


class Cancel(Request, frozen=True, tag="cancel"):
    """Stop the generation in progress (read by the worker's reader thread at once)."""


class Verify(Request, frozen=True, tag="verify"):
    id: int


class Describe(Request, frozen=True, tag="describe"):
    id: int


class Unload(Request, frozen=True, tag="unload"):
    pass


# -- worker -> gateway ---------------------------------------------------------------------------
class Reply(msgspec.Struct, frozen=True, tag_field="t"):
    """A reply from the worker (or Dead, made by the gateway when the worker is gone)."""


class Ready(Reply, frozen=True, tag="ready"):
    context_length: int
    accepts_grammar: bool
    pid: int
    facts: dict[str, int] = {}  # plain facts of the loaded backend that callers read (FACTS)


class LoadFailed(Reply, frozen=True, tag="load_failed"):
    kind: str  # "unavailable", "protocol" or the exception's class name
    message: str


class Text(Reply, frozen=True, tag="text"):
    id: int
    v: str


class Stats(Reply, frozen=True, tag="stats"):
    id: int
    v: GenerationStats  # on the wire as its fields (GenerationStats.to_dict())


class End(Reply, frozen=True, tag="end"):
    id: int


class Error(Reply, frozen=True, tag="error"):
    id: int | None
    kind: str
    message: str


class Counted(Reply, frozen=True, tag="count"):
    id: int
    n: int


class Verified(Reply, frozen=True, tag="verify"):
    id: int
    gate: int
    passed: bool
    detail: str
    evidence: dict[str, object]  # GateCheck.evidence


class Described(Reply, frozen=True, tag="describe"):
    id: int
    v: dict[str, object]  # ArtifactChain.data


class Unloaded(Reply, frozen=True, tag="unloaded"):
    pass


class Dead(Reply, frozen=True, tag="dead"):
    reason: str
    returncode: int | None = None


AnyRequest = Init | Count | Stream | Cancel | Verify | Describe | Unload
AnyReply = Ready | LoadFailed | Text | Stats | End | Error | Counted | Verified | Described | Unloaded | Dead
_ENCODER = msgspec.json.Encoder()
_REQUESTS = msgspec.json.Decoder(AnyRequest)
_REPLIES = msgspec.json.Decoder(AnyReply)

# A signal number as a reader would say it; anything else keeps its number.
_SIGNAL_NAMES = {int(s): s.name for s in signal.Signals}


def write_message(stream: IO[bytes], message: Request | Reply) -> None:
    """One message, flushed: the other side must see a token the moment it exists."""
    stream.write(_ENCODER.encode(message) + b"\n")
    stream.flush()


def _read_line(stream: IO[bytes]) -> bytes | None:
    while True:
        line = stream.readline()
        if not line or not line.endswith(b"\n"):
            return None  # closed, or torn by a death mid-write: not a message
        line = line.strip()
        if line:
            return line


def read_request(stream: IO[bytes]) -> AnyRequest | None:
    """The next request, or None at end of stream (the gateway closed the pipe or died)."""
    line = _read_line(stream)
    return None if line is None else _REQUESTS.decode(line)


def read_reply(stream: IO[bytes]) -> AnyReply | None:
    """The next reply, or None at end of stream (the worker closed its end or died)."""
    line = _read_line(stream)
    return None if line is None else _REPLIES.decode(line)


def exit_reason(returncode: int | None) -> str:
    """How a worker ended, as the answer log says it: 'SIGSEGV', 'exit status 3'."""
    if returncode is None:
        return "still running"
    if returncode < 0:
        return _SIGNAL_NAMES.get(-returncode, f"signal {-returncode}")
    if returncode > 128 and (returncode - 128) in _SIGNAL_NAMES:  # a shell in between reports 128+N
        return _SIGNAL_NAMES[returncode - 128]
    return f"exit status {returncode}"
