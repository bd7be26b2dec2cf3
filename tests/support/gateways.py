"""A gateway over a private copy of the sample index, answering extractively (no model involved)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from gateway.config import Settings
from gateway.services import Services


def extractive_gateway(tmp_path_factory: pytest.TempPathFactory, sample_data_dir: Path, embedder: Any,
                       name: str) -> Services:
    """Its own data directory (the shared index copied, no answer log), so its answers log nowhere else."""
    data = tmp_path_factory.mktemp(name) / "data"
    shutil.copytree(sample_data_dir, data, ignore=shutil.ignore_patterns("gateway.db*"))
    settings = Settings(data_dir=data)
    settings.answer.mode = "extractive"
    return Services(settings, embedder=embedder)
