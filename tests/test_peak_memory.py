"""Peak memory is the measuring process's own, also in workers a large harness process spawns."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="VmHWM is Linux's; elsewhere ru_maxrss is used")

REPORT = (
    "import json, resource; from whisperbench.process.host import peak_rss_mb; "
    "print(json.dumps([peak_rss_mb(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024]))"
)


def _python(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_peak_follows_an_allocation():
    code = (
        "import json, numpy as np; from whisperbench.process.host import peak_rss_mb; "
        "before = peak_rss_mb(); a = np.ones(300 * 2**20 // 8); after = peak_rss_mb(); "
        "print(json.dumps([before, after]))"
    )
    before, after = json.loads(_python(code))
    assert 250 <= after - before <= 350, (before, after)


def test_worker_spawned_by_a_large_process_reports_its_own_peak():
    """ru_maxrss of a subprocess started by a process that once held 800 MiB says >= 800 MiB."""
    parent = (
        "import json, subprocess, sys, numpy as np; a = np.ones(800 * 2**20 // 8); del a; "
        f"print(subprocess.run([sys.executable, '-c', {REPORT!r}], capture_output=True, text=True).stdout)"
    )
    own, inherited = json.loads(_python(parent))
    assert inherited >= 800, "the kernel no longer carries the parent's peak into ru_maxrss: simplify peak_rss_mb"
    assert own < 300, own
