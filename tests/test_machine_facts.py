"""runtimes.machine: the machine facts doctor, the supervised worker, `manualqa bench` and the bench
harness share, checked against what the kernel says of this test process and of a child."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time

import pytest

from runtimes import machine

if not sys.platform.startswith("linux"):
    pytest.skip("reads /proc", allow_module_level=True)


def test_memory_readers_agree_with_getrusage_and_each_other() -> None:
    pid = os.getpid()
    rss = machine.rss_bytes(pid)
    peak = machine.peak_rss_bytes(pid)
    status = machine.status_kib(pid, "VmRSS", "VmHWM", "NoSuchField")
    assert rss is not None and peak is not None
    assert set(status) == {"VmRSS", "VmHWM"}  # a field the kernel does not have is left out
    # statm and status count the same pages, read a moment apart
    assert 0.5 < rss / (status["VmRSS"] * 1024) < 2
    assert peak <= status["VmHWM"] * 1024  # a peak read later is never lower
    assert peak >= rss * 0.9
    # the kernel's peak (VmHWM) and getrusage's (KiB on Linux) are one figure
    assert machine.max_rss_kib() <= resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert 0.5 < peak / (machine.max_rss_kib() * 1024) <= 1.5


def test_a_child_s_cpu_time_grows_while_it_works_and_its_memory_shows() -> None:
    child = subprocess.Popen([sys.executable, "-c",
                              "import sys\nblock = bytearray(64 * 1024 * 1024)\n"
                              "for i in range(0, len(block), 4096): block[i] = 1\n"
                              "print('ready', flush=True)\nx = 0\n"
                              "while True: x += 1"],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        first = machine.cpu_seconds(child.pid)
        assert first is not None
        deadline = time.monotonic() + 60  # only bounds a hang: the child spins until killed
        later = first
        while later <= first and time.monotonic() < deadline:
            time.sleep(0.05)
            later = machine.cpu_seconds(child.pid) or first
        assert later > first
        rss = machine.rss_bytes(child.pid)
        assert rss is not None and rss >= 64 * 1024 * 1024  # the 64 MiB it touched are resident
        assert (machine.peak_rss_bytes(child.pid) or 0) >= rss * 0.9
    finally:
        child.kill()
        child.wait()
    # a process that has gone: None (or nothing), never an exception
    assert machine.cpu_seconds(child.pid) is None
    assert machine.rss_bytes(child.pid) is None
    assert machine.peak_rss_bytes(child.pid) is None
    assert machine.status_kib(child.pid, "VmRSS") == {}


def test_cores_and_cpu() -> None:
    assert 1 <= machine.cores_available() <= max(1, machine.logical_cores())
    assert machine.cores_available() == len(os.sched_getaffinity(0))
    assert machine.cpu_model() and machine.cpu_model() != "unknown"
    model_name = machine.cpuinfo().get("model name")
    if model_name:  # x86: the name the kernel gives, as doctor and the bench records print it
        assert machine.cpu_model() == model_name
    total = machine.memory_total_kib()
    assert total is not None and total * 1024 > (machine.rss_bytes(os.getpid()) or 0)


def test_the_four_users_read_the_same_facts() -> None:
    from bench import harness
    from gateway.qa.conditions import machine_conditions
    from runtimes import worker_protocol
    from runtimes.device_info import describe_device

    device, conditions = describe_device(), machine_conditions()
    assert device["cpu"] == conditions["cpu_model"] == harness.cpu_model() == machine.cpu_model()
    assert device["cpu_count"] == conditions["cpu_count"] == machine.logical_cores()
    assert conditions["cores_available"] == harness.cores_available() == machine.cores_available()
    assert worker_protocol.rss_bytes is machine.rss_bytes
    assert worker_protocol.cpu_seconds is machine.cpu_seconds
    pid = os.getpid()
    assert harness.proc_mib(pid, "VmHWM")["VmHWM"] * 1024 * 1024 <= (machine.peak_rss_bytes(pid) or 0)
