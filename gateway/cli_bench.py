"""`manualqa bench`: the same-conditions comparison of deployment profiles (work in progress)."""

from __future__ import annotations

import click


@click.command("bench")
def bench() -> None:
    """Compare deployment profiles under the same recorded conditions."""
    raise click.ClickException("bench: not implemented yet")
