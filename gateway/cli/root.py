"""The `manualqa` group and what every command shares: the context, `--json`, and error translation.

Command modules (answer, index, replay, bench, runtime, serve) import this module only, and
register their commands on `main` with `@main.command(...)` / `@main.group(...)`; the package
`gateway.cli` imports them, so imports run one way: package -> command modules -> root.

Library errors meant for the user (gateway.errors: a missing index version, a bad profile, an
unknown replay run ...) become a one-line `Error: ...` with exit status 1 in one place, `Root.invoke`,
so commands just call the library. A command that wants a prefix on the message (`bench: ...`)
wraps the call in `user_errors(prefix)` instead.

A command that changes the gateway's state (activates a version, creates a key, removes a manual)
runs its library call inside `audited(ctx, action, target)`: one row in the audit trail, as the web's
middleware writes for the same action over HTTP, with the actor `cli:<os user>`.
"""

from __future__ import annotations

import getpass
import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import click

from gateway import __version__
from gateway.config import Settings, load_settings
from gateway.errors import is_user_error

if TYPE_CHECKING:
    from gateway.services import Services

F = TypeVar("F", bound=Callable[..., object])

@contextmanager
def user_errors(prefix: str = "", suffix: str = "",
                also: tuple[type[BaseException], ...] = ()) -> Iterator[None]:
    """Turn a user-facing library error (or one of `also`) into `Error: {prefix}{message}{suffix}`."""
    try:
        yield
    except Exception as exc:
        if is_user_error(exc) or isinstance(exc, also):
            raise click.ClickException(f"{prefix}{exc}{suffix}") from exc
        raise


class Root(click.Group):
    """The top-level group: every subcommand runs inside `user_errors()`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.late: dict[str, list[click.Command]] = {}  # see in_group()

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        super().add_command(cmd, name)
        if isinstance(cmd, click.Group):
            for extra in self.late.get(name or cmd.name or "", []):
                cmd.add_command(extra)

    def invoke(self, ctx: click.Context) -> object:
        with user_errors():
            return super().invoke(ctx)


class Ctx:
    """Per-invocation state: settings are read once, heavy objects are built on first use."""

    def __init__(self, config_path: str | None) -> None:
        self.config_path = config_path
        self._settings: Settings | None = None
        self._services: Services | None = None

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            with user_errors("configuration: "):
                self._settings = load_settings(self.config_path)
        return self._settings

    @property
    def services(self) -> Services:
        if self._services is None:
            from gateway.services import Services

            self._services = Services(self.settings)
        return self._services


pass_ctx = click.make_pass_decorator(Ctx)


@dataclass
class Audited:
    """What a command tells its audit row while it runs: the target once known (a new version), what changed,
    and the exit status it will end with when it fails without raising (an ingest that read no file)."""

    target: str = ""
    detail: str = ""
    exit_status: int = 0


def cli_actor() -> str:
    """The CLI in the audit trail: `cli:<os user>`, and who ran sudo when it was sudo."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # a uid without a name (a container)
        user = f"uid-{os.getuid()}"
    sudo = os.environ.get("SUDO_USER", "")
    return f"cli:{user}" + (f" (sudo from {sudo})" if sudo and sudo != user else "")


def _failure(exc: BaseException, note: Audited) -> tuple[int, str] | None:
    """(exit status, message) of a command that failed; None for one that ended well (exit 0)."""
    if isinstance(exc, SystemExit):
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        return None if code == 0 else (code, note.detail or f"exit status {code}")
    if isinstance(exc, click.exceptions.Exit):  # ctx.exit(n)
        return None if exc.exit_code == 0 else (exc.exit_code, note.detail or f"exit status {exc.exit_code}")
    if isinstance(exc, click.ClickException):
        return exc.exit_code, exc.format_message()
    if isinstance(exc, KeyboardInterrupt):
        return 130, "interrupted"
    return 1, str(exc) or type(exc).__name__


@contextmanager
def audited(ctx: Ctx, action: str, target: str = "") -> Iterator[Audited]:
    """Record the command's `action` in the audit trail with AuditLog.record, the web's own writer.

    ok (status 0) when the block ends, failed (the exit status and the error's message) when it raises.
    A trail that cannot be written is a warning on stderr: the action itself has happened (or not).
    """
    from gateway.records.audit import AuditLog

    note = Audited(target)
    failed: tuple[int, str] | None = None
    try:
        yield note
    except BaseException as exc:
        failed = _failure(exc, note)
        raise
    finally:
        status, detail = failed or (note.exit_status, note.detail)
        try:
            AuditLog(ctx.settings.db_path).record(action, cli_actor(), "cli", note.target, status, detail,
                                                  result="failed" if failed or note.exit_status else "ok")
        except Exception as exc:  # noqa: BLE001 - say so, and let the command's own outcome stand
            click.echo(f"warning: not recorded in the audit trail: {action}: {exc}", err=True)


def json_option(help_text: str | None = None) -> Callable[[F], F]:
    """`--json` (passed to the command as `as_json`): every printing command has it."""
    return click.option("--json", "as_json", is_flag=True, help=help_text)


def emit_json(data: object) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


@click.group(cls=Root, context_settings={"help_option_names": ["-h", "--help"]})
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


C = TypeVar("C", bound=click.Command)


def in_group(group: str) -> Callable[[C], C]:
    """Put a command into `main`'s subgroup `group` that another command module defines.

    A command module imports gateway.cli.root only (tests/test_layers.py), so it cannot import the
    group itself; the command joins the group whichever of the two modules is imported first.
    """

    def attach(cmd: C) -> C:
        main.late.setdefault(group, []).append(cmd)
        target = main.commands.get(group)
        if isinstance(target, click.Group):
            target.add_command(cmd)
        return cmd

    return attach
