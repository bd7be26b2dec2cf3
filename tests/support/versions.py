"""A data directory with two index versions, for tests that need an inactive one (test-only).

The first version holds the piston board's manual only; the second adds the Voron guide and is the
active one: a question tried on the first can only find the piston board.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.server import REPO_ROOT

PISTON = REPO_ROOT / "sample_manuals" / "noaa_lcp_pistonboard_user_manual.pdf"
VORON = REPO_ROOT / "sample_manuals" / "voron0_setup_guide.pdf"


def two_versions(target: Path, embedder: Any) -> tuple[Path, str, str]:
    """(data directory, the older piston-only version, the active version with both manuals)."""
    from gateway.config import Settings
    from gateway.services import Services

    gw = Services(Settings(data_dir=target), embedder=embedder)  # the session's loaded model
    old = gw.ingest([PISTON]).version
    new = gw.ingest([VORON]).version
    assert old and new and old != new and gw.store.active_id() == new
    return target, old, new
