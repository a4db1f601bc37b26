"""What a run ran on: machine facts, package versions, peak memory."""

from __future__ import annotations

import os
import platform
import sys

from ..process.host import cpu_counters, others_busy_cpus, usable_cpus

CORE_PACKAGES = ("whisperbench", "numpy", "jiwer", "whisper-normalizer", "soundfile", "soxr", "datasets", "pandas")


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


#: other processes keeping more than this share of the usable CPUs busy make speed figures unreliable
BUSY_SHARE = 0.25
BUSY_STEAL_PCT = 10.0


def load_snapshot() -> dict:
    """The 1-minute load average (for the record) and the CPU counters a run's busy check compares."""
    load = round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None
    return {"load_1m": load, **cpu_counters()}


def machine_load(before: dict, after: dict, threads: int = 0) -> dict:
    """How busy other processes kept the machine during a run: the CPUs they used on average (machine-wide
    CPU time less this process's own and its reaped children's), CPU steal, and whether that makes the run's
    speed figures unreliable. The load average is recorded too, but it lags by minutes and counts the run itself."""
    cpus = usable_cpus()
    others = others_busy_cpus(before, after)
    steal = None
    if before.get("total_s") is not None and after.get("total_s", 0) > before["total_s"]:
        steal = round(100.0 * (after["steal_s"] - before["steal_s"]) / (after["total_s"] - before["total_s"]), 1)
    reasons = []
    if others is not None and others > BUSY_SHARE * cpus:
        reasons.append(f"other processes kept {others:.1f} of {cpus} CPU(s) busy")
    if steal is not None and steal > BUSY_STEAL_PCT:
        reasons.append(f"{steal:g} % of CPU time stolen by the hypervisor")
    return {
        "load_1m_before": before.get("load_1m"),
        "load_1m_after": after.get("load_1m"),
        "other_cpus_busy": None if others is None else round(others, 2),
        "steal_pct": steal,
        "usable_cpus": cpus,
        "threads": threads,
        "busy": bool(reasons),
        "why": "; ".join(reasons),
    }


def machine_info() -> dict:
    """Facts about this machine for run.json: OS, Python, CPU model and flags, cores, memory, accelerators."""
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
