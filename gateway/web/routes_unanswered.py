"""GET /api/v1/admin/unanswered: what technicians ask that the manuals do not answer (issue 48, item 9).

The selection and grouping live in gateway.records.unanswered; here the composition root lends it the
embedder the gateway already holds (for grouping by meaning), the manuals' display titles and the
text of passages the log keeps by id only. Admin only: it lists technicians' questions.
"""

from __future__ import annotations

import logging
import re
import threading
from typing import TYPE_CHECKING, Annotated, Any

import msgspec
from litestar import Controller, get
from litestar.concurrency import sync_to_thread
from litestar.datastructures import State
from litestar.di import NamedDependency
from litestar.params import QueryParameter

from gateway.answer_fields import CLIENTS
from gateway.records.answer_rows import LogError
from gateway.records.question_groups import QuestionVectors
from gateway.records.unanswered import TECHNICIAN_CLIENTS, PassageText, unanswered_view
from gateway.services import Services
from gateway.web.errors import ApiError
from gateway.web.responses_ops import UnansweredView
from gateway.web.security import admin_guard

if TYPE_CHECKING:
    from retrieval.embedders import Embedder

log = logging.getLogger("manualqa.web")
WEEK_PATTERN = r"^\d{4}-W\d{2}$"


class VectorsByModel:
    """The questions' vectors per embedder (id#hash): each question is encoded once. One per app (its
    state's `question_vectors`), not shared with another app in the process."""

    def __init__(self) -> None:
        self._by_model: dict[str, QuestionVectors] = {}
        self._lock = threading.Lock()

    def of(self, embedder: Embedder) -> QuestionVectors:
        key = f"{embedder.model_id}#{embedder.model_hash}"
        with self._lock:
            return self._by_model.setdefault(key, QuestionVectors(embedder.encode))


def question_vectors(services: Services, held: VectorsByModel) -> QuestionVectors | None:
    """The configured embedder's question vectors, from `held`; None (exact-repeat grouping) when it
    cannot load."""
    try:
        embedder = services.embedder
    except Exception as exc:  # noqa: BLE001 - the view still serves, grouped by text; the log says why
        log.warning("unanswered view: no embedder (%s); grouping exact repeats only", exc)
        return None
    return held.of(embedder)


def manual_titles(services: Services) -> dict[str, str]:
    """sha256 -> the title the pages show (an admin's display title, else the PDF's), active version."""
    try:
        manuals = services.store.open().chunks.manuals()
    except Exception:  # noqa: BLE001 - no index yet: file names are shown
        return {}
    services.show_titles(manuals)
    return {str(m["sha256"]): str(m.get("title") or m.get("file_name") or "") for m in manuals}


def passage_text(services: Services) -> PassageText:
    """(version, chunk ids) -> {chunk_id: (heading, text)} from that version's chunk store; a version
    collected since (gc) gives nothing, and the view shows manual and page only."""

    def read(version: str, chunk_ids: list[str]) -> dict[str, tuple[str, str]]:
        if not version or not chunk_ids:
            return {}
        try:
            return services.store.open(version).chunks.texts_by_id(chunk_ids)
        except Exception:  # noqa: BLE001 - gone or unreadable: no text
            return {}

    return read


def _clients(client: str | None) -> tuple[str, ...]:
    if not client:
        return TECHNICIAN_CLIENTS
    names = tuple(c.strip() for c in client.split(",") if c.strip())
    unknown = [c for c in names if c not in CLIENTS]
    if unknown or not names:
        raise ApiError(400, "invalid_request", f"client must be among {', '.join(CLIENTS)}, not {client!r}")
    return names


class UnansweredController(Controller):
    path = "/admin/unanswered"
    tags = ["answers"]
    guards = [admin_guard]

    @get("/", summary="Questions the manuals did not answer, grouped by meaning, per manual and ISO week")
    async def unanswered(
        self, state: State, services: NamedDependency[Services],
        since: Annotated[str, QueryParameter(max_length=64)] = "8w",
        manual: Annotated[str | None, QueryParameter(max_length=300, pattern=r"\S")] = None,
        week: Annotated[str | None, QueryParameter(pattern=WEEK_PATTERN)] = None,
        client: Annotated[str | None, QueryParameter(max_length=100)] = None,
        limit: Annotated[int, QueryParameter(ge=1, le=500)] = 50) -> UnansweredView:
        """not_found answers, thumbs-down answers and questions the same asker asked again within ten
        minutes, from technicians' clients (web, api, openai) unless `client` names others."""
        clients = _clients(client)
        if week and not 1 <= int(re.sub(r"^\d{4}-W", "", week)) <= 53:
            raise ApiError(400, "invalid_request", f"week must be like 2026-W49, not {week!r}")

        def build() -> dict[str, Any]:
            services.log.flush()  # the answers just given are in the view
            vectors = question_vectors(services, state.question_vectors)
            return unanswered_view(services.settings.db_path, vectors=vectors, since=since,
                                   manual=manual.strip() if manual else None, week=week, clients=clients,
                                   limit=limit, passage_text=passage_text(services), titles=manual_titles(services))

        try:
            view = await sync_to_thread(build)
        except LogError as exc:
            raise ApiError(400, "invalid_request", str(exc)) from None
        return msgspec.convert(view, UnansweredView)
