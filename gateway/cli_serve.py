"""CLI commands (filled in by its issue)."""

import click


def register(group: click.Group) -> None:
    """Add this module's commands to the top-level group."""
