"""`manualqa install-service`: a systemd unit for running the gateway as a hardened service.

`render_unit` (pure) writes the unit for one installation; the command fills it in for this one
(the absolute path of this venv's `manualqa`), checks that the sandbox will not hide what the
service needs, and prints the unit or writes it with the commands left to run. It never runs
useradd or systemctl itself. The unit's text is one template (manualqa.service.in beside this module,
package data); `manualqa install-service --print` shows it rendered for this installation;
docs/operations.md, "Running as a service", says the rest.
"""

from __future__ import annotations

import grp
import os
import pwd
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from string import Template

import click

from gateway.cli.root import emit_json, json_option, main
from gateway.config import ServerSettings
from gateway.errors import GatewayError

UNIT_NAME = "manualqa.service"
# The unit with $placeholders, each line with the reason it is there: package data, one source.
UNIT_TEMPLATE = Template((files("gateway.cli") / "manualqa.service.in").read_text(encoding="utf-8"))
EXAMPLE_COMMAND = "/opt/manualqa/bin/manualqa"  # the venv docs/operations.md's example is rendered for
# Where the unit's sandbox hides the host's files, and the line that hides them.
HIDDEN = {"/home": "ProtectHome=yes", "/root": "ProtectHome=yes", "/run/user": "ProtectHome=yes",
          "/tmp": "PrivateTmp=yes", "/var/tmp": "PrivateTmp=yes"}
STOP_MARGIN_S = 30  # TimeoutStopSec beyond the drain: cancelled answers log, the log closes
_MEMORY = re.compile(r"^(\d+[KMGT]?|\d{1,2}%|infinity)$")


class ServiceError(GatewayError):
    """A unit that would not run as asked (a hidden venv, a relative path, running as root)."""

    code = "service_error"


@dataclass(frozen=True)
class UnitOptions:
    command: str  # absolute: the venv's `manualqa` (or `.../python -m gateway`)
    host: str = ServerSettings.host
    port: int = ServerSettings.port
    user: str = "manualqa"
    data_dir: str = "/var/lib/manualqa"
    memory_max: str = "2G"
    drain_timeout_s: float = ServerSettings.drain_timeout_s
    devices: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()  # supplementary groups that own the devices
    config: str | None = None


def check_options(o: UnitOptions) -> None:
    """Refuse what the unit cannot do (relative paths, root, a bad limit or device), saying why."""
    for what, path in (("ExecStart command", o.command.split()[0]), ("data directory", o.data_dir),
                       ("config file", o.config)):
        if path is not None and not Path(path).is_absolute():
            raise ServiceError(f"the {what} must be an absolute path, not {path!r}")
    if o.user in ("root", "0"):
        raise ServiceError("the service runs as a dedicated user (its files, nothing more), not as root")
    if not _MEMORY.match(o.memory_max):
        raise ServiceError(f"--memory-max {o.memory_max!r}: use bytes with K/M/G/T, a percentage or infinity")
    for dev in o.devices:
        if not (dev.startswith("/dev/") or dev.startswith(("char-", "block-"))) or Path(dev).is_dir():
            raise ServiceError(f"--device {dev!r}: a device node (/dev/dri/renderD128) or class (char-drm)")


def hidden_paths(paths: Iterable[str | Path]) -> list[str]:
    """One message per path that the unit's sandbox would hide from the service."""
    out = []
    for path in dict.fromkeys(str(p) for p in paths):
        for prefix, line in HIDDEN.items():
            if path == prefix or path.startswith(prefix + "/"):
                out.append(f"{path} (under {prefix}, which {line} hides)")
    return out


def interpreter_chain(command: str) -> list[Path]:
    """The command, the file it resolves to and its #! interpreter (resolved): the service runs all three."""
    exe = Path(command.split()[0])
    chain = [exe, exe.resolve()]
    try:
        with open(exe, "rb") as fh:
            first = fh.readline(512)
    except OSError:
        return chain
    if first.startswith(b"#!") and first[2:].split():
        interp = Path(first[2:].split()[0].decode(errors="replace"))
        chain += [interp, interp.resolve()]
    return chain


def device_groups(devices: Iterable[str]) -> tuple[str, ...]:
    """The groups owning the existing device nodes that others may not open (render, video)."""
    groups: list[str] = []
    for dev in devices:
        try:
            st = os.stat(dev)
        except OSError:
            continue
        if st.st_gid != 0 and st.st_mode & 0o006 != 0o006:
            name = grp.getgrgid(st.st_gid).gr_name
            if name not in groups:
                groups.append(name)
    return tuple(groups)


def render_unit(o: UnitOptions) -> str:
    """The unit file, each line with the reason it is there."""
    check_options(o)
    state = o.data_dir.removeprefix("/var/lib/")
    if "/" in state or state == o.data_dir:  # not /var/lib/NAME: systemd cannot manage it
        storage = (f"# The data directory (index versions, gateway.db, keys) is not under /var/lib: create it\n"
                   f"# owned by {o.user}; it is the one writable place under ProtectSystem=strict.\n"
                   f"ReadWritePaths={o.data_dir}\n")
    else:
        storage = (f"# The data directory (index versions, gateway.db, keys): systemd creates {o.data_dir}\n"
                   f"# owned by {o.user}; it is the one writable place under ProtectSystem=strict.\n"
                   f"StateDirectory={state}\nStateDirectoryMode=0750\n")
    storage += f"WorkingDirectory={o.data_dir}\nEnvironment=MANUALQA_DATA={o.data_dir}\n"
    config = (f"# The configuration ([server], [answer], the profile); read-only for the service.\n"
              f"Environment=MANUALQA_CONFIG={o.config}\n") if o.config else ""
    if o.devices:
        devices = ("# The profile's runtime opens an NPU/GPU: /dev stays the host's (PrivateDevices=yes would hide\n"
                   "# it) and the device cgroup admits only these beside null, zero, random, tty.\n"
                   "PrivateDevices=no\nDevicePolicy=closed\n"
                   + "".join(f"DeviceAllow={d} rw\n" for d in o.devices)
                   + (f"# The groups that own those device nodes.\nSupplementaryGroups={' '.join(o.groups)}\n"
                      if o.groups else ""))
    else:
        devices = ("# No device nodes beyond null, zero, random: the CPU profiles need none. Not for an NPU or\n"
                   "# GPU profile (/dev/rknpu, /dev/dri/renderD*, /dev/nvidia*), which this would hide: render\n"
                   "# the unit with `manualqa install-service --device PATH`, which writes instead\n"
                   "#   PrivateDevices=no\n#   DevicePolicy=closed\n#   DeviceAllow=/dev/dri/renderD129 rw\n"
                   "PrivateDevices=yes\n")
    if o.port < 1024:
        caps = ("# A port below 1024: the one capability the server keeps.\n"
                "AmbientCapabilities=CAP_NET_BIND_SERVICE\nCapabilityBoundingSet=CAP_NET_BIND_SERVICE\n")
    else:
        caps = "# No capabilities at all: the server needs none on a port above 1023.\nCapabilityBoundingSet=\n"
    return UNIT_TEMPLATE.substitute(
        executable=o.command.split()[0], user=o.user, storage=storage, config=config, command=o.command,
        host=o.host, port=o.port, drain_timeout_s=f"{o.drain_timeout_s:g}", stop_margin_s=STOP_MARGIN_S,
        timeout_stop_s=f"{o.drain_timeout_s + STOP_MARGIN_S:g}", memory_max=o.memory_max, devices=devices,
        caps=caps)


def this_command() -> str:
    """This installation's `manualqa` (the console script beside the running python), absolute."""
    script = Path(sys.executable).parent / "manualqa"
    return str(script.absolute()) if script.is_file() else f"{Path(sys.executable).absolute()} -m gateway"


def next_steps(o: UnitOptions) -> list[str]:
    """What is left to run as root: this command never runs useradd or systemctl itself."""
    steps = []
    try:
        pwd.getpwnam(o.user)
    except KeyError:
        steps.append(f"useradd --system --user-group --home-dir {o.data_dir} --no-create-home "
                     f"--shell /usr/sbin/nologin {o.user}")
    if not o.data_dir.startswith("/var/lib/") or "/" in o.data_dir.removeprefix("/var/lib/"):
        steps.append(f"install -d -o {o.user} -g {o.user} -m 0750 {o.data_dir}")
    return [*steps, "systemctl daemon-reload", "systemctl enable --now manualqa",
            "journalctl -u manualqa -f   # its log"]


@main.command("install-service")
@click.option("--print", "print_only", is_flag=True, help="Print the unit (the default when not root).")
@click.option("--unit-dir", type=click.Path(file_okay=False), default=None,
              help=f"Write {UNIT_NAME} here (default as root: /etc/systemd/system).")
@click.option("--executable", default=None, help="The manualqa command for ExecStart (default: this venv's).")
@click.option("--host", default=ServerSettings.host, show_default=True, help="Bind address.")
@click.option("--port", type=int, default=ServerSettings.port, show_default=True, help="Port.")
@click.option("--user", default="manualqa", show_default=True, help="The dedicated user (and group) it runs as.")
@click.option("--data-dir", default="/var/lib/manualqa", show_default=True, help="Data directory (absolute).")
@click.option("--service-config", default=None, help="manualqa.toml the service reads (absolute).")
@click.option("--memory-max", default="2G", show_default=True, help="MemoryMax= (e.g. 2G, 6G, 50%).")
@click.option("--drain-timeout", type=float, default=ServerSettings.drain_timeout_s, show_default=True,
              help="Seconds answers may finish after SIGTERM (TimeoutStopSec is 30 s more).")
@click.option("--device", "devices", multiple=True, help="A device the runtime needs (NPU/GPU); repeatable.")
@json_option("The unit, where it was written and the next commands, as JSON.")
def install_service(print_only: bool, unit_dir: str | None, executable: str | None, host: str, port: int,
                    user: str, data_dir: str, service_config: str | None, memory_max: str,
                    drain_timeout: float, devices: tuple[str, ...], as_json: bool) -> None:
    """Write (or print) a hardened systemd unit that runs `manualqa serve` from this installation."""
    command = executable or this_command()
    opts = UnitOptions(command=command, host=host, port=port, user=user, data_dir=data_dir,
                       memory_max=memory_max, drain_timeout_s=drain_timeout, devices=devices,
                       groups=device_groups(devices), config=service_config)
    unit = render_unit(opts)
    hidden = hidden_paths(interpreter_chain(command))
    if hidden:
        raise ServiceError(f"the service could not run {command}: it needs {'; '.join(hidden)}. Install "
                           "manualqa in a venv whose python is outside /home, /root and /tmp (e.g. the system "
                           "python3 -m venv /opt/manualqa) and run install-service from there")
    hidden = hidden_paths([data_dir, *([service_config] if service_config else [])])
    if hidden:
        raise ServiceError(f"the service could not use {'; '.join(hidden)}: keep its data and configuration "
                           "outside /home, /root and /tmp (the default data directory is /var/lib/manualqa)")
    target = None if print_only else unit_dir or ("/etc/systemd/system" if os.geteuid() == 0 else None)
    path = None if target is None else Path(target) / UNIT_NAME
    steps = next_steps(opts)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(unit, encoding="utf-8")
    if as_json:
        emit_json({"unit": unit, "path": None if path is None else str(path), "next": steps})
    elif path is None:
        click.echo(unit, nl=False)
        if not print_only:
            click.echo("(printed: run as root, or pass --unit-dir DIR, to write it)", err=True)
    else:
        click.echo(f"wrote {path}\nnext, as root:\n" + "".join(f"  {s}\n" for s in steps), nl=False)
