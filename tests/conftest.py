"""Session-wide fixtures shared by the test modules: the sample manuals, their question set and
one embedding model (loading it once per session keeps the suite fast on a small box)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# Tests never reach the network: models come from installed packages only.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

REPO_ROOT = Path(__file__).resolve().parent.parent
SAMPLE_DIR = REPO_ROOT / "sample_manuals"
SAMPLE_PDF_NAMES = ("noaa_lcp_pistonboard_user_manual.pdf", "voron0_setup_guide.pdf")


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def sample_dir() -> Path:
    return SAMPLE_DIR


@pytest.fixture(scope="session")
def sample_pdfs() -> list[Path]:
    paths = [SAMPLE_DIR / name for name in SAMPLE_PDF_NAMES]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        pytest.fail(f"sample manuals missing: {missing}")
    return paths


@pytest.fixture(scope="session")
def questions() -> list[dict[str, Any]]:
    path = SAMPLE_DIR / "questions.jsonl"
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


@pytest.fixture(scope="session")
def embedder() -> Any:
    # Imported here: collecting tests must not pull in torch / sentence-transformers.
    from retrieval.embedders import load_embedder

    return load_embedder()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless chromium per test module (tests/support/browser.py)."""
    from tests.support.browser import chromium

    with chromium() as b:
        yield b


@pytest.fixture(scope="session")
def torch_embedder() -> Any:
    """The same model on sentence-transformers + torch (the default before the ONNX one)."""
    from retrieval.embedders import PACKAGED_MODEL, load_embedder

    return load_embedder(PACKAGED_MODEL)


@pytest.fixture(scope="session")
def torch_data_dir(tmp_path_factory: pytest.TempPathFactory, torch_embedder: Any) -> Path:
    """The sample manuals indexed with the torch copy of the model (what older gateways hold)."""
    from tests.support.server import built_index

    return built_index(tmp_path_factory.mktemp("torch-data") / "data", torch_embedder)


@pytest.fixture(scope="session")
def sample_data_dir(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Path:
    """A data directory with the two sample manuals ingested once per session (copy before writing)."""
    from tests.support.server import built_index

    return built_index(tmp_path_factory.mktemp("sample-data") / "data", embedder)
