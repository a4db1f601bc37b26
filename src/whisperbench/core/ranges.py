"""The documented range of every numeric limit a user sets (gate thresholds, metric thresholds, perturbations):
one place that refuses a value outside it, NaN and infinity included, with one line naming the option.

A limit that is not a finite number in its range is refused (``OptionError``, exit 2), never passed on: a NaN
compares false with everything, so ``--min-qoi nan`` would judge nothing and a NaN margin would pass any candidate.

>>> Range(0, 100, unit="%").check("--min-qoi", 95)
95.0
>>> Range(0, 100, unit="%").check("--min-qoi", float("nan"))
Traceback (most recent call last):
...
whisperbench.errors.OptionError: --min-qoi must be a finite number from 0 to 100 %, got nan
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import OptionError


@dataclass(frozen=True)
class Range:
    """Finite numbers from ``low`` to ``high`` (inclusive unless ``open_low``); whole numbers when ``integer``."""

    low: float
    high: float = math.inf
    integer: bool = False
    open_low: bool = False
    unit: str = ""

    def describe(self) -> str:
        """The range in words, as the refusal says it."""
        kind = "a whole number" if self.integer else "a finite number"
        unit = f" {self.unit}" if self.unit else ""
        low = f"above {self.low:g}" if self.open_low else f"from {self.low:g}"
        return f"{kind} {low}{unit}" if math.isinf(self.high) else f"{kind} {low} to {self.high:g}{unit}"

    def check(self, name: str, value: Any) -> float:
        """``value`` as a float (an int when ``integer``), or OptionError naming ``name`` and the range."""
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise OptionError(f"{name} must be {self.describe()}, got {value!r}") from None
        below = number <= self.low if self.open_low else number < self.low
        if not math.isfinite(number) or below or number > self.high or (self.integer and number != int(number)):
            raise OptionError(f"{name} must be {self.describe()}, got {value}")
        return int(number) if self.integer else number


PERCENT = Range(0, 100, unit="%")
POINTS = Range(0, 100, unit="points")
COUNT = Range(0, integer=True)

#: ``--confidence`` on the command line: a percentage (the API's ``confidence`` is the fraction, 0.5 to 0.999)
CONFIDENCE_PERCENT = Range(50, 99.9, unit="%")

#: the release gate's thresholds (``api.gate`` keyword -> range); the CLI's option is the key with dashes
GATE_LIMITS: dict[str, Range] = {
    "min_qoi": PERCENT,
    "max_wer_increase": POINTS,
    "min_qoi_per_language": PERCENT,
    "min_coverage": PERCENT,
    "max_failed_pct": PERCENT,
    "confidence": Range(0.5, 0.999),
    "max_new_loops": COUNT,
    "max_new_bursts": COUNT,
    "max_nonspeech_output_rate": PERCENT,
    "max_formatting_drift": PERCENT,
    "max_timing_error_ms": Range(0, 60_000, unit="ms"),
    "max_slowdown": Range(-99, 100_000, unit="%"),
    "max_memory_increase": Range(-99, 100_000, unit="%"),
    "max_load_increase": Range(-99, 100_000, unit="%"),
    "max_latency_p90": Range(0, 3600, unit="s"),
    "non_inferiority_margin": POINTS,
    "non_inferiority_qoi_margin": POINTS,
    "resamples": Range(100, 1_000_000, integer=True),
    "seed": Range(0, 2**32 - 1, integer=True),
}


def check_limits(values: Mapping[str, Any], ranges: Mapping[str, Range], prefix: str = "--") -> dict[str, Any]:
    """``values`` with each one that has a range checked (None: not set, left as is); the option is named as on the
    command line (``min_qoi`` -> ``--min-qoi``).

    >>> check_limits({"min_qoi": "95", "runs_dir": "runs", "max_new_loops": None}, GATE_LIMITS)
    {'min_qoi': 95.0, 'runs_dir': 'runs', 'max_new_loops': None}
    """
    out = dict(values)
    for key, value in values.items():
        limit: Range | None = ranges.get(key)
        if limit is not None and value is not None:
            out[key] = limit.check(prefix + key.replace("_", "-"), value)
    return out
