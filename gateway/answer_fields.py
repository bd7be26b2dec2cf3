"""What one answer is made of, declared once: its fields, with the outcome and client vocabularies.

`AnswerFields` is the one declaration of an answer's fields. The answer core fills them
(gateway.answer.result.AnswerResult extends it with its citation and flag types), the answer log
stores them (gateway.records.answer_rows derives its columns, and checks them against the
migrations) and the API returns them (gateway.web.responses derives AnswerOut and AnswerRow). It sits
below the answer core and the records, so that the records, which never import the answer core,
derive from the same declaration. Adding a logged field: a field here and a migration in
gateway.records.db (docs/architecture.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import Field, dataclass, field
from typing import Any, Generic, Literal, Protocol, TypeVar, get_args

# answered: every sentence shown is backed by the passage it cites; evidence_only: quoted evidence
# is shown instead of an answer (extractive mode, or the model's text was not supported);
# not_found: the evidence was too weak to show as an answer. The one list of outcome names: the
# pipeline, metrics, CLI and web take them from here (ui/templates/admin.html is checked against it).
Outcome = Literal["answered", "evidence_only", "not_found", "error", "cancelled"]
OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)
# Who asked: web (the technician page), api (the JSON API, any other tool), openai (/v1), cli
# (`manualqa ask`), replay (`manualqa replay`), bench (`manualqa bench`). The one list of client
# names: the web routes, the CLI's `log --client` and the log's record() (it refuses any other).
Client = Literal["web", "api", "openai", "cli", "replay", "bench"]
CLIENTS: tuple[Client, ...] = get_args(Client)


def flag_parts(flag: str) -> dict[str, str]:
    """A flag's text, "name" or "name: detail" (gateway.answer.flags renders it), as {"name", "detail"}:
    the form the API gives beside the text (docs/api.md, `flag_details`), for a flag fresh or logged."""
    name, _, detail = flag.partition(": ")
    return {"name": name, "detail": detail}


@dataclass(frozen=True)
class Logged:
    """How a field goes to the answer log where that is more than a column of its own name
    (gateway.records.answer_rows reads it; a list or dict field is a JSON column without saying so)."""

    stored: bool = True  # False: derived from other fields, so computed again on read, never stored
    # keys of a dict field that also get a column each (NULL when absent), so that SQL filters and sorts on them
    columns: tuple[tuple[str, type[int] | type[float]], ...] = ()


LOGGED = "logged"  # the key of a Logged in a field's metadata


def logged(spec: Field[object]) -> Logged:
    """The field's Logged (its metadata's, or the plain default: stored, one column)."""
    found = spec.metadata.get(LOGGED)
    return found if isinstance(found, Logged) else Logged()


class _Flagged(Protocol):
    @property
    def flags(self) -> Sequence[str]: ...


class FlagDetails:
    """AnswerFields.flag_details: its flags as {"name", "detail"}, read from `flags` each time (one list,
    two forms; nothing to keep in step). A field, so that the API's answer carries it in its place."""

    def __get__(self, result: _Flagged | None, owner: type | None = None) -> list[dict[str, str]]:
        return [] if result is None else [flag_parts(str(f)) for f in result.flags]  # str: a plain name

    def __set__(self, result: object, value: object) -> None:
        """The dataclass may assign the default: nothing to store."""


CitationT = TypeVar("CitationT")
FlagT = TypeVar("FlagT", bound=str)


@dataclass
class AnswerFields(Generic[CitationT, FlagT]):
    """An answer's fields, in the order the API gives them; the log stores each in the column of its
    name unless its Logged says otherwise (the columns' order is the migrations')."""

    id: str
    time: str
    question: str
    scope: list[str]
    answer: str = ""
    outcome: Outcome = "answered"
    mode: str = "generate"  # generate | extractive | extractive_fallback
    citations: list[CitationT] = field(default_factory=list)
    flags: list[FlagT] = field(default_factory=list)  # gateway.answer.flags; each a str, "name[: detail]"
    # the same flags as {"name", "detail"} (docs/api.md): derived from `flags`, never stored
    flag_details: FlagDetails = field(default=FlagDetails(), init=False, repr=False, compare=False,
                                      metadata={LOGGED: Logged(stored=False)})
    passages: list[dict[str, Any]] = field(default_factory=list)  # retrieved hits (+ n, given)
    index_version: str | None = None
    chain_id: str | None = None
    profile: str | None = None
    generation_config: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, Any] = field(default_factory=dict, metadata={LOGGED: Logged(columns=(
        ("retrieval_ms", float), ("embed_ms", float), ("ttft_ms", float), ("total_ms", float),
        ("prompt_tokens", int), ("output_tokens", int), ("decode_tps", float)))})
    error: str | None = None
    client: str = "cli"
    key_name: str | None = None
    draft: str = ""  # the model's text as generated; `answer` keeps its supported sentences
    support: list[dict[str, Any]] = field(default_factory=list)  # gateway.answer.support, one per sentence
