"""API keys over HTTP (issue 10): list, create, revoke, admin only, for the admin page and scripts.

The same KeyStore methods as `manualqa keys list|create|revoke` (gateway.records.keys), on the
app's one KeyStore. A key is in the create response only; gateway.db keeps its hash. Revoking
takes effect on the next request, for bearer use and for every admin session logged in with the
key (sessions are looked up joined with the unrevoked keys), including the caller's own session:
that is allowed, the admin page warns before it, and the response says so (`own_key`).
"""

from __future__ import annotations

from litestar import Controller, get, post
from litestar.concurrency import sync_to_thread
from litestar.datastructures import CacheControlHeader
from litestar.di import NamedDependency
from litestar.params import FromPath, JSONBody

from gateway.records.keys import KeyStore
from gateway.services import Services
from gateway.web.errors import ApiError
from gateway.web.responses_admin import KeyCreated, KeyList, KeyOut, KeyRevoked
from gateway.web.schemas import KeyCreateRequest
from gateway.web.security import AppRequest, admin_guard, principal_of

SHOWN_ONCE = "This is the only time the key is shown: only its hash is stored. Copy it now."


def _admins_left(store: KeyStore) -> int:
    return sum(1 for k in store.list() if k["role"] == "admin" and k["revoked"] is None)


class KeysController(Controller):
    path = "/keys"
    tags = ["keys"]
    guards = [admin_guard]

    @get("/", summary="Every API key (never the key itself): role, created, last used, revoked")
    async def list_keys(self, services: NamedDependency[Services]) -> KeyList:
        """Revoked keys are listed too, renamed NAME@revoked-TIME (the name is free for a new key)."""
        rows = await sync_to_thread(services.keys.list)
        return KeyList(keys=[KeyOut(**r) for r in rows])

    @post("/", status_code=201, cache_control=CacheControlHeader(no_store=True),
          summary="Create a key; the response holds the key, shown this once")
    async def create(self, services: NamedDependency[Services], data: JSONBody[KeyCreateRequest]) -> KeyCreated:
        """409 `conflict` when an unrevoked key has the name already (revoke it first)."""
        key = await sync_to_thread(services.keys.create, data.name, data.role)
        return KeyCreated(name=data.name, role=data.role, key=key, note=SHOWN_ONCE)

    @post("/{name:str}/revoke", status_code=200,
          summary="Revoke a key: refused from the next request on, its admin sessions end at once")
    async def revoke(self, request: AppRequest, services: NamedDependency[Services],
                     name: FromPath[str]) -> KeyRevoked:
        """Revoking the key of one's own session is allowed (and logs one out); 404 for no such active key."""
        caller = principal_of(request)
        store: KeyStore = services.keys
        if not await sync_to_thread(store.revoke, name):
            raise ApiError(404, "not_found", f"no active key named {name!r}")
        return KeyRevoked(name=name, revoked=True, own_key=caller is not None and caller.name == name,
                          admin_keys_left=await sync_to_thread(_admins_left, store))
