"""What a run ran on: machine facts, package versions, peak memory."""

from __future__ import annotations

import os
import platform
import resource
import sys
from importlib.metadata import PackageNotFoundError, version
from typing import Iterable

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


def machine_info() -> dict:
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # macOS
        usable = os.cpu_count() or 1
    try:
        import psutil

        memory_gb = round(psutil.virtual_memory().total / 2**30, 1)
    except ImportError:
        memory_gb = None
    return {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu": _cpu_model(),
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
