"""Index versions: list, activate, rollback, diff (admin for changes)."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Controller, get, post
from litestar.concurrency import sync_to_thread
from litestar.di import NamedDependency
from litestar.params import FromPath, FromQuery, QueryParameter

from gateway.services import Services
from gateway.web.errors import ApiError
from gateway.web.responses_admin import Activated, IndexDiff, RolledBack, VersionList
from gateway.web.security import admin_guard, reader_guard
from retrieval.types import RetrievalError


class IndexController(Controller):
    path = "/index"
    tags = ["index"]

    @get("/versions", guards=[reader_guard], summary="Index versions, newest first")
    async def versions(self, services: NamedDependency[Services]) -> VersionList:
        store = services.store
        versions = await sync_to_thread(store.list_versions)
        return VersionList(active=store.active_id(), versions=list(reversed(versions)))

    @post("/versions/{version:str}/activate", guards=[admin_guard], status_code=200,
          summary="Verify, then activate a version")
    async def activate(self, services: NamedDependency[Services], version: FromPath[str]) -> Activated:
        store = services.store
        _known(store, version)
        await sync_to_thread(store.activate, version)
        return Activated(active=store.active_id())

    @post("/rollback", guards=[admin_guard], status_code=200,
          summary="Re-activate the parent of the active version (or ?to=V)")
    async def rollback(self, services: NamedDependency[Services], to: FromQuery[str | None] = None) -> RolledBack:
        store = services.store
        previous = store.active_id()
        if to:
            _known(store, to)
        try:
            active = await sync_to_thread(store.rollback, to)
        except RetrievalError as exc:  # nothing to roll back to is a state conflict, not a bad request
            raise ApiError(409, "conflict", str(exc)) from exc
        return RolledBack(active=active, previous=previous)

    @get("/diff", guards=[reader_guard], summary="Manuals added / removed / changed between versions")
    async def diff(self, services: NamedDependency[Services], from_: Annotated[str, QueryParameter(name="from")],
                   to: FromQuery[str]) -> IndexDiff:
        store = services.store
        _known(store, from_)
        _known(store, to)
        return IndexDiff(**await sync_to_thread(services.index_diff, from_, to))


def _known(store: Any, version: str) -> None:
    if version not in {v["id"] for v in store.list_versions()}:
        raise ApiError(404, "not_found", f"no index version {version!r}")
