"""`manualqa`: a thin command line over the library; every printing command has --json."""

from __future__ import annotations

import json
from typing import Any

import click

from gateway import __version__
from gateway.config import ConfigError, Settings, load_settings


class Ctx:
    """Per-invocation state: settings are read once, heavy objects are built on first use."""

    def __init__(self, config_path: str | None) -> None:
        self.config_path = config_path
        self._settings: Settings | None = None
        self._gateway: Any = None

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            try:
                self._settings = load_settings(self.config_path)
            except ConfigError as exc:
                raise click.ClickException(f"configuration: {exc}") from exc
        return self._settings

    @property
    def gateway(self) -> Any:
        if self._gateway is None:
            from gateway.context import Gateway

            self._gateway = Gateway(self.settings)
        return self._gateway


pass_ctx = click.make_pass_decorator(Ctx)


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="manualqa")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), default=None,
              help="manualqa.toml to read (default: ./manualqa.toml or $MANUALQA_CONFIG).")
@click.pass_context
def main(ctx: click.Context, config_path: str | None) -> None:
    """manualqa: offline answers from equipment manuals, with the passages they came from.

    \b
    Typical use:
      manualqa ingest sample_manuals        build a new index version from PDFs
      manualqa search "flash the firmware"  ranked passages (manual + page)
      manualqa ask "How do I flash the firmware?"
      manualqa serve                        technician page, admin page and JSON API
      manualqa doctor                       check the deployment profile's three gates
    """
    ctx.obj = Ctx(config_path)


def _register() -> None:
    from gateway import cli_answer, cli_index, cli_replay, cli_runtime, cli_serve

    for module in (cli_index, cli_runtime, cli_answer, cli_serve, cli_replay):
        module.register(main)


_register()

