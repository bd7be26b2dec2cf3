"""API keys: shown once at creation, stored only as a hash, each with a role (reader | admin)."""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from gateway.errors import GatewayError
from gateway.records.db import iso_utc, opened, utcnow

ROLES = ("reader", "admin")
# A name travels in URLs (POST /api/v1/keys/{name}/revoke) and in the answer log; '@' is kept out
# because a revoked key's row is renamed NAME@revoked-TIME, which a new name must never collide with.
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
_NAME_RE = re.compile(NAME_PATTERN)
LAST_USED_RESOLUTION_S = 60  # last_used is written at most once a minute per key: no write per request


class KeyStoreError(GatewayError):
    """A key operation that cannot be done (bad name, unknown role)."""


class KeyExistsError(KeyStoreError):
    """An active key already has this name."""

    http_status = 409
    code = "conflict"


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
        if not _NAME_RE.fullmatch(name or ""):  # fullmatch: "$" alone would let a trailing newline in
            raise KeyStoreError(f"key name {name!r}: use 1-64 letters, digits, '.', '_' or '-', "
                                "starting with a letter or digit")
        key = "mqa_" + secrets.token_urlsafe(32)
        with opened(self.db_path) as db:
            if any(True for _ in db["api_keys"].rows_where("name = ? and revoked is null", [name])):
                raise KeyExistsError(f"a key named {name!r} exists already (revoke it first)")
            # name is the primary key: keep a revoked key's row under a dated name
            db.execute("update api_keys set name = name || '@revoked-' || revoked where name = ? "
                       "and revoked is not null", [name])
            db.table("api_keys").insert({"name": name, "role": role, "key_hash": _hash(key), "created": _now(),
                                   "last_used": None, "revoked": None})
        return key

    def verify(self, key: str) -> Principal | None:
        """The key's principal, or None; notes when it was used (to the minute) for `keys list`."""
        if not key:
            return None
        with opened(self.db_path) as db:
            rows = list(db["api_keys"].rows_where("key_hash = ? and revoked is null", [_hash(key)]))
            if not rows:
                return None
            row = rows[0]
            now = datetime.now(timezone.utc)
            stale = iso_utc(now - timedelta(seconds=LAST_USED_RESOLUTION_S))
            if row["last_used"] is None or row["last_used"] < stale:  # a read per request, a write per minute
                db.execute("update api_keys set last_used = ? where key_hash = ?", [iso_utc(now), row["key_hash"]])
        return Principal(row["name"], row["role"], row["key_hash"])

    def is_live(self, principal: Principal) -> bool:
        """Whether the key behind `principal` is still unrevoked (checked on every session use)."""
        if not principal.key_hash:
            return False
        with opened(self.db_path) as db:
            row = db.execute("select 1 from api_keys where key_hash = ? and revoked is null",
                             [principal.key_hash]).fetchone()
        return row is not None

    def list(self) -> list[dict[str, Any]]:
        """Every key, oldest first (revoked ones too, under NAME@revoked-TIME); never the key itself."""
        with opened(self.db_path) as db:
            rows = db["api_keys"].rows_where(order_by="created, name")
            return [{k: r[k] for k in ("name", "role", "created", "last_used", "revoked")} for r in rows]

    def revoke(self, name: str) -> bool:
        with opened(self.db_path) as db:
            cur = db.execute("update api_keys set revoked = ? where name = ? and revoked is null", [_now(), name])
            return bool(cur.rowcount > 0)
