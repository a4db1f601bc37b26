"""Conditions of derived examples (``whisperbench perturb``): an id ``PARENT~CONDITION`` names its parent example
and what was done to it; reports group results by condition.

>>> condition_of("jfk~pink@10dB"), parent_of("jfk~pink@10dB"), condition_of("jfk")
('pink@10dB', 'jfk', 'clean')
>>> snr_of("jfk~babble@-5dB"), snr_of("jfk~gain+6dB")
(-5.0, None)
"""

from __future__ import annotations

import re
from typing import Any

SEPARATOR = "~"
_NOISE = re.compile(r"^(?P<noise>[a-z]+)@(?P<snr>-?[0-9.]+)dB$")


def condition_of(example_id: str) -> str:
    """The condition of a derived example's id; ``clean`` for an id without one."""
    return example_id.rsplit(SEPARATOR, 1)[1] if SEPARATOR in example_id else "clean"


def parent_of(example_id: str) -> str:
    """The id of the example a derived example was made from (the id itself when not derived)."""
    return example_id.rsplit(SEPARATOR, 1)[0]


def snr_of(condition_or_id: str) -> float | None:
    """The SNR in dB of a noise condition (``pink@10dB``), else None."""
    match = _NOISE.match(condition_of(condition_or_id) if SEPARATOR in condition_or_id else condition_or_id)
    return float(match["snr"]) if match else None


def noise_of(condition: str) -> str | None:
    """The noise kind of a noise condition (``pink@10dB`` -> ``pink``), else None."""
    match = _NOISE.match(condition)
    return match["noise"] if match else None


def condition_order(condition: str) -> tuple[Any, ...]:
    """Sort key: clean first, then each noise from high to low SNR, then the other conditions by name."""
    snr = snr_of(condition)
    if condition == "clean":
        return (0, "", 0.0, "")
    return (1, noise_of(condition), -snr, "") if snr is not None else (2, "", 0.0, condition)
