"""Parsing ahead of the embedding model: a thread feeds the parse worker processes
(ingest.sandbox.parse_many) so that a manual is parsed while the one before it is embedded.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ingest.models import IngestError, ParsedManual, ParseLimits


def parse_in_background(
    paths: Sequence[Path], limits: ParseLimits, workers: int
) -> Iterable[list[tuple[Path, ParsedManual | IngestError]]]:
    """Yield groups of parse results: each group is everything parsed while the consumer was busy.

    A thread keeps the worker processes parsing ahead of the consumer (the embedding model).
    """
    from ingest.sandbox import parse_many

    results: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=2 * max(1, workers))
    stop = threading.Event()

    def put(item: tuple[str, Any]) -> bool:
        while not stop.is_set():
            try:
                results.put(item, timeout=0.2)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in parse_many(list(paths), limits, workers=workers):
                if not put(("item", item)):
                    return  # the consumer gave up; stop parsing
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer thread
            put(("error", exc))
        finally:
            put(("done", None))

    thread = threading.Thread(target=produce, name="manualqa-parse", daemon=True)
    thread.start()
    try:
        finished = False
        while not finished:
            group = []
            kind, value = results.get()  # wait for one, then take whatever else is ready
            while True:
                if kind == "done":
                    finished = True
                    break
                if kind == "error":
                    raise value
                group.append(value)
                try:
                    kind, value = results.get_nowait()
                except queue.Empty:
                    break
            if group:
                yield group
    finally:
        stop.set()
        thread.join(timeout=5)
