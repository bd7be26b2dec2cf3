"""The id and the time every record carries: time-ordered ids and UTC timestamps in the one stored format.

Below both the answer core (an answer's id and time) and the records (every row's), so that neither
takes them from the other; gateway.records.db re-exports them for the records' own modules.
"""

from __future__ import annotations

import os
import threading
import time
from datetime import datetime, timezone


def iso_utc(moment: datetime) -> str:
    """The one stored timestamp format: UTC, milliseconds, Z (fixed width, so text order is time order)."""
    return moment.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def utcnow() -> str:
    return iso_utc(datetime.now(timezone.utc))


_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_id_lock = threading.Lock()
_last_id: list[int] = [0, 0]  # [milliseconds, random part] of the last id handed out


def new_id() -> str:
    """A 26-character ULID-style id: 48-bit milliseconds + 80 random bits, Crockford base32.

    Ids sort by creation time; within one millisecond in this process they still sort in
    creation order (the random part is incremented), so that `ORDER BY id` is time order.
    """
    with _id_lock:
        ms = time.time_ns() // 1_000_000
        if ms <= _last_id[0]:
            ms, rand = _last_id[0], _last_id[1] + 1
        else:
            rand = int.from_bytes(os.urandom(10), "big") >> 1  # room to increment
        _last_id[0], _last_id[1] = ms, rand
    value = (ms << 80) | (rand & ((1 << 80) - 1))
    out = []
    for _ in range(26):
        out.append(_CROCKFORD[value & 31])
        value >>= 5
    return "".join(reversed(out))
