"""CPUs this process may use, how busy other processes keep them, how many threads a run should take,
this process's peak memory and the installed package versions: the lowest layer's machine facts."""

from __future__ import annotations

import os
import resource
import sys
import time
from collections.abc import Iterable

_HZ = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_SAMPLE: tuple[float, float] = (-1e9, 0.0)  # (when, CPUs busy with other processes)


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask, where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS
        return os.cpu_count() or 1


def cpu_counters() -> dict:
    """Machine-wide busy and total CPU seconds (/proc/stat), steal seconds, and this process's own CPU seconds
    (its reaped children included); empty where /proc/stat is missing."""
    try:
        with open("/proc/stat", encoding="utf-8") as fh:
            ticks = [int(v) for v in fh.readline().split()[1:]]
    except (OSError, ValueError):
        return {}
    idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)  # idle + iowait
    own = os.times()
    return {
        "wall": time.monotonic(),
        "busy_s": (sum(ticks[:8]) - idle) / _HZ,
        "total_s": sum(ticks[:8]) / _HZ,
        "steal_s": (ticks[7] if len(ticks) > 7 else 0) / _HZ,
        "own_s": own.user + own.system + own.children_user + own.children_system,
    }


def others_busy_cpus(before: dict, after: dict) -> float | None:
    """How many CPUs other processes kept busy, on average, between two ``cpu_counters`` readings."""
    if not before or not after or after["wall"] <= before["wall"]:
        return None
    others = (after["busy_s"] - before["busy_s"]) - (after["own_s"] - before["own_s"])
    return max(0.0, others / (after["wall"] - before["wall"]))


def others_busy_now(sample_s: float = 0.2, since: dict | None = None) -> float:
    """CPUs other processes keep busy right now: measured from ``since`` (a :func:`cpu_counters` reading, this
    process's own work in between subtracted) where that is at least ``sample_s`` old, else sampled for
    ``sample_s`` (a sample is reused for 10 s)."""
    global _SAMPLE
    if since:
        now = cpu_counters()
        if now and now["wall"] - since["wall"] >= sample_s:
            return others_busy_cpus(since, now) or 0.0
    if time.monotonic() - _SAMPLE[0] < 10.0:
        return _SAMPLE[1]
    before = cpu_counters()
    time.sleep(sample_s)
    busy = others_busy_cpus(before, cpu_counters())
    _SAMPLE = (time.monotonic(), busy or 0.0)
    return _SAMPLE[1]


def idle_cpus(since: dict | None = None) -> int:
    """The CPUs this process may use less those other processes keep busy right now (:func:`others_busy_now`,
    rounded), at least 1: how many threads a run takes and how many workers a scoring pool starts by default. A
    machine whose cores other processes already take gains nothing from more of ours: decoding threads then wait on
    each other, and a pool's own costs are not paid back (docs/benchmarks.md has the figures)."""
    return max(1, usable_cpus() - int(others_busy_now(since=since) + 0.5))


def package_versions(names: Iterable[str]) -> dict[str, str]:
    """Installed versions of the named distributions (absent ones are left out)."""
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for name in names:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            continue
    return found


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MiB.

    On Linux this is the kernel's high-water mark of the process's own memory (``VmHWM``), not
    ``ru_maxrss``: a process started by ``subprocess`` (vfork + exec) inherits its parent's peak in
    ``ru_maxrss``, so a small worker spawned by a large harness process would report the harness's peak.
    """
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024
