"""Facts about this machine and its processes, read locally (the kernel's /proc; no network).

One place for what doctor records (`runtimes.device_info`), what the supervised worker reports
(`runtimes.worker_protocol`), the conditions a `manualqa bench` records (`gateway.qa.conditions`)
and the bench harness (`bench.harness`):

- the CPU: `cpuinfo` (the first value of each /proc/cpuinfo key), `cpu_model`;
- cores: `logical_cores` (the machine's), `cores_available` (those this process may run on);
- memory: `memory_total_kib`;
- a process: `cpu_seconds`, `rss_bytes`, `peak_rss_bytes`, `status_kib` (fields of
  /proc/PID/status), and `max_rss_kib` (this process's own peak, or its waited-for children's).

Readers of another process answer None (or leave a field out) where /proc cannot be read: the
process has gone, or this is not Linux.
"""

from __future__ import annotations

import os
import platform
import resource
from pathlib import Path

# /proc/cpuinfo keys that name the CPU, in order: x86 says "model name"; ARM boards say "Model" or
# "Hardware"; MIPS "cpu model".
_MODEL_KEYS = ("model name", "Model", "Hardware", "cpu model")


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def cpuinfo() -> dict[str, str]:
    """/proc/cpuinfo as key -> value, the first processor's value of each key ({} where unreadable)."""
    fields: dict[str, str] = {}
    for line in _read("/proc/cpuinfo").splitlines():
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    return fields


def cpu_model() -> str:
    """The CPU's name from /proc/cpuinfo; the platform's processor string (or machine) elsewhere."""
    fields = cpuinfo()
    for key in _MODEL_KEYS:
        if fields.get(key):
            return fields[key]
    return platform.processor() or platform.machine() or "unknown"


def logical_cores() -> int:
    """Logical CPUs of the machine (0 where the platform does not say)."""
    return os.cpu_count() or 0


def cores_available() -> int:
    """Logical CPUs this process may run on (its affinity: taskset, systemd's CPUAffinity=)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def memory_total_kib() -> int | None:
    """MemTotal from /proc/meminfo in KiB; None where unreadable."""
    for line in _read("/proc/meminfo").splitlines():
        if line.startswith("MemTotal:"):
            parts = line.split()
            return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None
    return None


def cpu_seconds(pid: int) -> float | None:
    """CPU time (user + system) a live process has used so far, from /proc; None where unreadable."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()  # the name in parentheses may hold spaces
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def rss_bytes(pid: int) -> int | None:
    """Resident memory of a live process, from /proc/PID/statm; None where unreadable."""
    try:
        with open(f"/proc/{pid}/statm", encoding="ascii") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, IndexError, ValueError):
        return None


def status_kib(pid: int, *fields: str) -> dict[str, int]:
    """Fields of /proc/PID/status in KiB (VmRSS, VmHWM, RssAnon, RssFile, ...); a field that is not
    there, or a process that has gone, is left out."""
    out: dict[str, int] = {}
    for line in _read(f"/proc/{pid}/status").splitlines():
        key, _, value = line.partition(":")
        if key in fields:
            try:
                out[key] = int(value.split()[0])
            except (IndexError, ValueError):
                continue
    return out


def peak_rss_bytes(pid: int) -> int | None:
    """The highest resident memory a live process has had (VmHWM), from /proc; None where unreadable."""
    kib = status_kib(pid, "VmHWM").get("VmHWM")
    return None if kib is None else kib * 1024


def max_rss_kib(children: bool = False) -> int:
    """The peak resident memory of this process (or of its waited-for children), as getrusage gives
    it: KiB on Linux (bytes on macOS)."""
    return resource.getrusage(resource.RUSAGE_CHILDREN if children else resource.RUSAGE_SELF).ru_maxrss
