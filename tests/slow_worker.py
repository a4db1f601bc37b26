"""A child-process target for the supervision tests: answers ``echo`` at once and ``slow`` after a while."""

from __future__ import annotations

import time


class SlowWorker:
    """Built in the child from its config (``{"slow_s": seconds}``)."""

    def __init__(self, config: dict):
        self.slow_s = float(config.get("slow_s", 2.0))

    def echo(self, value):
        """``value`` back at once."""
        return value

    def slow(self, value):
        """``value`` back after ``slow_s`` seconds."""
        time.sleep(self.slow_s)
        return ("late", value)

    def burn(self, cpu_s: float) -> float:
        """Spend ``cpu_s`` CPU seconds on another thread of this process (as a native library's thread pool
        would) and sleep as long on this one; the thread's own CPU count back."""
        import threading

        spent = []

        def spin() -> None:
            start = time.thread_time()
            while time.thread_time() - start < cpu_s:
                pass
            spent.append(time.thread_time() - start)

        worker = threading.Thread(target=spin)
        worker.start()
        worker.join()
        time.sleep(cpu_s)  # waiting is no CPU
        return spent[0]
