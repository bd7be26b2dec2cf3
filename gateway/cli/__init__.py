"""The `manualqa` command line: a thin layer over the library (console script `gateway.cli:main`).

Where things are:
  root.py     the `main` group, the per-invocation context, `--json`, library errors -> `Error: ...`
  answer.py   ask, log (show, export)
  manuals.py  ingest, remove, rename
  index.py    search, index (list, show, activate, rollback, diff, verify, gc)
  replay.py   replay (run, compare, list, show)
  bench.py    bench
  runtime.py  doctor, profile (show, activate, rollback, history)
  serve.py    serve, keys (create, list, revoke)
  backup.py   backup, restore
  service.py  install-service
  fleet.py    index export, index import, signing (create, list, export-public, trust, untrust)
  embedder.py embedder convert (a local sentence-transformers directory to ONNX)
  audit.py    audit (the trail of admin actions; state-changing commands write to it: root.audited)

A new command goes in the module of its concern as `@main.command(...)`, importing only
gateway.cli.root; a new module is one more name in the import below. Importing a command module
registers its commands, so this package imports them all, and nothing else in gateway imports the
CLI (tests/test_layers.py checks both).
"""

from gateway.cli import (  # noqa: F401 - importing a command module registers its commands
    answer,
    audit,
    backup,
    bench,
    embedder,
    fleet,
    index,
    manuals,
    replay,
    runtime,
    serve,
    service,
)
from gateway.cli.root import main

__all__ = ["main"]
