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
