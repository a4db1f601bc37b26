"""CPUs this process may use and how many threads a run should take: the lowest layer's machine facts."""

from __future__ import annotations

import os


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask, where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS
        return os.cpu_count() or 1


def default_threads() -> int:
    """Threads per implementation: the usable CPUs less those other processes keep busy (at least 1), so a
    run does not oversubscribe a busy machine (oversubscribed, 2 threads ran 4-20x slower than 1 here)."""
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    return max(1, usable_cpus() - int(load + 0.5))
