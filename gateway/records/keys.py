"""API keys: shown once at creation, stored only as a hash, each with a role (reader | admin)."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gateway.errors import GatewayError
from gateway.records.db import opened, utcnow

ROLES = ("reader", "admin")


class KeyStoreError(GatewayError):
    """A key operation that cannot be done (duplicate name, unknown role)."""


@dataclass(frozen=True)
class Principal:
    name: str
    role: str
    # The hash of the key this principal proved: a session made with it lives only while the key does.
    key_hash: str = field(default="", compare=False, repr=False)

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"


def _hash(key: str) -> str:
    # Keys are 256-bit random tokens, so a plain SHA-256 is not brute-forceable.
    return hashlib.sha256(key.encode()).hexdigest()


def _now() -> str:
    return utcnow()


class KeyStore:
    def __init__(self, db_path: Path) -> None:
        self.db_path = db_path

    def create(self, name: str, role: str = "reader") -> str:
        if role not in ROLES:
            raise KeyStoreError(f"unknown role {role!r} (use one of: {', '.join(ROLES)})")
        if not name or len(name) > 64:
            raise KeyStoreError("a key needs a name of 1-64 characters")
        key = "mqa_" + secrets.token_urlsafe(32)
        with opened(self.db_path) as db:
            if any(True for _ in db["api_keys"].rows_where("name = ? and revoked is null", [name])):
                raise KeyStoreError(f"a key named {name!r} exists already (revoke it first)")
            # name is the primary key: keep a revoked key's row under a dated name
            db.execute("update api_keys set name = name || '@revoked-' || revoked where name = ? "
                       "and revoked is not null", [name])
            db["api_keys"].insert({"name": name, "role": role, "key_hash": _hash(key), "created": _now(),
                                   "last_used": None, "revoked": None})
        return key

    def verify(self, key: str) -> Principal | None:
        if not key:
            return None
        with opened(self.db_path) as db:
            rows = list(db["api_keys"].rows_where("key_hash = ? and revoked is null", [_hash(key)]))
        if not rows:
            return None
        return Principal(rows[0]["name"], rows[0]["role"], rows[0]["key_hash"])

    def is_live(self, principal: Principal) -> bool:
        """Whether the key behind `principal` is still unrevoked (checked on every session use)."""
        if not principal.key_hash:
            return False
        with opened(self.db_path) as db:
            row = db.execute("select 1 from api_keys where key_hash = ? and revoked is null",
                             [principal.key_hash]).fetchone()
        return row is not None

    def list(self) -> list[dict[str, Any]]:
        with opened(self.db_path) as db:
            return [{k: r[k] for k in ("name", "role", "created", "revoked")} for r in db["api_keys"].rows]

    def revoke(self, name: str) -> bool:
        with opened(self.db_path) as db:
            cur = db.execute("update api_keys set revoked = ? where name = ? and revoked is null", [_now(), name])
            return cur.rowcount > 0
