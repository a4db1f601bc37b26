"""Pausing the garbage collector while millions of small objects are built (reading and scoring large run stores)."""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator

#: whether a pause ends by moving what is alive out of the collector's reach (:func:`freeze_after_pauses`)
_FREEZE = False


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
