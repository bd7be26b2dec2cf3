"""Small HTTP helpers the API tests share: the bearer header, and the one error shape every 4xx has."""

from __future__ import annotations

from typing import Any

import httpx


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def error_of(r: httpx.Response, *statuses: int) -> dict[str, Any]:
    """The error object of a response that has one of `statuses`, in the shape docs/api.md promises."""
    assert r.status_code in statuses, (r.status_code, r.text[:300])
    body = r.json()
    assert set(body) == {"error"} and body["error"]["code"] and body["error"]["message"], body
    return body["error"]
