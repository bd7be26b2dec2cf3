"""The conditions a benchmark ran under, recorded beside its figures: CPU, cores this process may
use, load, thermal zones and power supplies as the kernel reports them ("not available" where it
reports none), so that two runs are compared knowing whether the box was hot, busy or on battery.
CPU and cores are read by runtimes.machine, as doctor and the bench harness read them.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import Any

from runtimes import machine

NOT_AVAILABLE = "not available"


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return ""


def thermal_readings(root: str = "/sys/class/thermal") -> dict[str, float] | str:
    """Every thermal zone's temperature in °C ("type/zoneN" -> value), or "not available"."""
    out: dict[str, float] = {}
    for zone in sorted(Path(root).glob("thermal_zone*")):
        raw = _read(zone / "temp")
        if raw.lstrip("-").isdigit():
            out[f"{_read(zone / 'type') or 'zone'}/{zone.name}"] = int(raw) / 1000.0
    return out or NOT_AVAILABLE


def power_readings(root: str = "/sys/class/power_supply") -> dict[str, dict[str, str]] | str:
    """Each supply's type, status and power figures as the kernel reports them, or "not available"."""
    keys = ("type", "online", "status", "capacity", "power_now", "voltage_now", "current_now")
    out = {}
    for supply in sorted(Path(root).glob("*")):
        values = {k: v for k in keys if (v := _read(supply / k))}
        if values:
            out[supply.name] = values
    return out or NOT_AVAILABLE


def max_temperature(readings: dict[str, float] | str) -> float | None:
    return max(readings.values()) if isinstance(readings, dict) and readings else None


def machine_conditions() -> dict[str, Any]:
    governor = _read(Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"))
    return {
        "device": platform.machine(), "system": f"{platform.system()} {platform.release()}",
        "cpu_model": machine.cpu_model(), "cpu_count": machine.logical_cores(),
        "cores_available": machine.cores_available(),
        "cpu_governor": governor or NOT_AVAILABLE, "load_average": list(os.getloadavg()),
        "thermal_c": thermal_readings(), "power": power_readings(), "python": platform.python_version(),
    }
