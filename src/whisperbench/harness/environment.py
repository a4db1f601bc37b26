"""What a run ran on: machine facts, package versions, peak memory."""

from __future__ import annotations

import os
import platform
import resource
import sys
from importlib.metadata import PackageNotFoundError, version
from typing import Iterable

from ..machine import usable_cpus

CORE_PACKAGES = ("whisperbench", "numpy", "jiwer", "whisper-normalizer", "soundfile", "soxr", "datasets", "pandas")


def package_versions(names: Iterable[str]) -> dict[str, str]:
    """Installed versions of the named distributions (absent ones are left out)."""
    found = {}
    for name in names:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            continue
    return found


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _cpu_flags() -> list[str]:
    """The instruction-set extensions that decide which kernels run (int8 and fp16 paths differ by them)."""
    wanted = ("avx", "avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_int8", "f16c", "fma", "neon", "asimd")
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith(("flags", "Features")):
                    present = set(line.split(":", 1)[1].split())
                    return [flag for flag in wanted if flag in present]
    except OSError:
        pass
    return []


#: another process's load above this share of the usable CPUs makes speed figures unreliable
BUSY_LOAD_PER_CPU = 0.5
BUSY_STEAL_PCT = 10.0


def load_snapshot() -> dict:
    """The 1-minute load average and the CPU time counters (steal: time the hypervisor gave elsewhere)."""
    snapshot = {"load_1m": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None}
    try:
        with open("/proc/stat", encoding="utf-8") as fh:
            ticks = [int(v) for v in fh.readline().split()[1:]]
        snapshot.update(total_ticks=sum(ticks), steal_ticks=ticks[7] if len(ticks) > 7 else 0)
    except (OSError, ValueError):
        pass
    return snapshot


def machine_load(before: dict, after: dict, threads: int) -> dict:
    """How busy the machine was around a run: the load of *other* processes (before it started, and after
    it, less its own threads), CPU steal, and whether that makes its speed figures unreliable."""
    cpus = usable_cpus()
    others = [v for v in (before.get("load_1m"), None if after.get("load_1m") is None
                          else after["load_1m"] - threads) if v is not None]
    other_load = round(max(others), 2) if others else None
    steal = None
    if "total_ticks" in before and "total_ticks" in after and after["total_ticks"] > before["total_ticks"]:
        steal = round(100.0 * (after["steal_ticks"] - before["steal_ticks"])
                      / (after["total_ticks"] - before["total_ticks"]), 1)
    reasons = []
    if other_load is not None and other_load > BUSY_LOAD_PER_CPU * cpus:
        reasons.append(f"load {other_load:g} from other processes on {cpus} CPU(s)")
    if steal is not None and steal > BUSY_STEAL_PCT:
        reasons.append(f"{steal:g} % of CPU time stolen by the hypervisor")
    return {"load_1m_before": before.get("load_1m"), "load_1m_after": after.get("load_1m"),
            "other_load": other_load, "steal_pct": steal, "usable_cpus": cpus, "busy": bool(reasons),
            "why": "; ".join(reasons)}


def machine_info() -> dict:
    usable = usable_cpus()
    try:
        import psutil

        memory_gb = round(psutil.virtual_memory().total / 2**30, 1)
    except ImportError:
        memory_gb = None
    return {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu": _cpu_model(),
        "cpu_flags": _cpu_flags(),
        "cpu_count": os.cpu_count(),
        "usable_cpus": usable,
        "memory_gb": memory_gb,
        "python": sys.version.split()[0],
        "thread_env": thread_env(),
    }


THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def thread_env() -> dict[str, str]:
    """The thread-pool variables set in this process's environment.

    Libraries size their pools from them (numpy's OpenBLAS from ``OMP_NUM_THREADS``); the pool size
    changes speed and, through float summation order, even transcripts, so runs record them.
    """
    return {name: os.environ[name] for name in THREAD_VARIABLES if os.environ.get(name)}


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
