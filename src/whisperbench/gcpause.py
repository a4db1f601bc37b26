"""Pausing the garbage collector while millions of small objects are built (reading and scoring large run stores)."""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator

#: whether a pause ends by moving what is alive out of the collector's reach (:func:`freeze_after_pauses`)
_FREEZE = False
#: the command line's threshold of the youngest generation (CPython's default: 700 net new containers)
COMMAND_LINE_THRESHOLD = 100_000
_DEFAULT_THRESHOLD = 700  # CPython's


def collect_less_often() -> None:
    """Collect the youngest generation every :data:`COMMAND_LINE_THRESHOLD` net new containers instead of 700 (the
    command line, for its one command): what a command builds first, its imports and then its records, lives to its
    end, and each early collection scans it again (28 ms of a 10,000-pair ``score``, 15 of them before its helper
    forks: 131 collections of the youngest generation and 11 of the next). Cyclic garbage is still collected, a
    hundred thousand containers later at most; while a model infers, as usual (:func:`collecting_as_usual`).
    """
    gc.set_threshold(COMMAND_LINE_THRESHOLD, *gc.get_threshold()[1:])


@contextmanager
def collecting_as_usual() -> Iterator[None]:
    """CPython's default threshold of the youngest generation (700) while a model infers: garbage of an inference
    library that sits in a cycle may hold audio and tensors, and is collected as soon as CPython would collect it."""
    threshold = gc.get_threshold()
    gc.set_threshold(_DEFAULT_THRESHOLD, *threshold[1:])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)


def freeze_after_pauses(on: bool = True) -> None:
    """Make every later :func:`paused_gc` end with ``gc.freeze()``: the objects alive then (the records just built,
    and everything older) are never scanned by the collector again, though reference counting still frees them.

    The command line turns it on for its one command: without it, the first collection after building a million
    records scans all of them (about 0.7 s of a 100k-pair ``score``, measured old against new; more at a million).
    A long-lived process that imports whisperbench keeps the default (off): there, cyclic garbage alive at a pause's
    end would never be collected.
    """
    global _FREEZE
    _FREEZE = on


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while many acyclic objects are created.

    Each collection rescans every object still alive, so building a million records with it on
    costs about twice as long; reference counting still frees memory meanwhile.
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            if _FREEZE:
                gc.freeze()
            gc.enable()
