"""The start method of every worker process the package starts (the harness's pools, scoring's, a sweep's).

``multiprocessing``'s ``spawn`` (``fork`` is unsafe with threaded native libraries) runs the caller's main
script again in each child, as ``__mp_main__``: a script that calls :func:`whisperbench.evaluate` at its top
level, without an ``if __name__ == "__main__":`` guard, would start the same run again in every worker, where
it meets the run's own lock, and every example failed. :func:`worker_context` starts children that never
import the caller's main module — as if the caller were ``python -m whisperbench`` — so a plain script,
``python -`` and a notebook work alike. Only when the work itself needs the main module (an adapter class
defined in the script) do the children run the script again; then a top-level call without the guard is
refused before any work, naming the guard.

>>> worker_context().get_start_method()
'spawn'
"""

from __future__ import annotations

import ast
import importlib.machinery
import multiprocessing
import multiprocessing.context
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any

from ..errors import WhisperbenchError

#: what the children are told the caller's main module is: a name ending in ``.__main__`` is never imported
_OWN_MAIN = importlib.machinery.ModuleSpec("whisperbench.__main__", None)
_LAUNCH = threading.Lock()  # one child launched at a time while the main module's __spec__ is swapped


class MainGuardMissing(WhisperbenchError):
    """Workers would run the caller's script again, and its top-level call has no ``__main__`` guard."""


if sys.platform != "win32":
    from multiprocessing.popen_spawn_posix import Popen as _SpawnPopen

    class _ScriptFreePopen(_SpawnPopen):
        """A spawned child told that the main module is ``whisperbench.__main__`` (which it does not import)."""

        def _launch(self, process_obj: Any) -> None:
            main = sys.modules["__main__"]
            with _LAUNCH:
                saved = getattr(main, "__spec__", None)
                main.__spec__ = _OWN_MAIN
                try:
                    super()._launch(process_obj)  # type: ignore[misc]  # stdlib, untyped
                finally:
                    main.__spec__ = saved

    class _ScriptFreeProcess(multiprocessing.context.SpawnProcess):
        @staticmethod
        def _Popen(process_obj: Any) -> Any:
            return _ScriptFreePopen(process_obj)

    class _ScriptFreeContext(multiprocessing.context.SpawnContext):
        Process = _ScriptFreeProcess


def worker_context(needs_main: bool = False) -> Any:
    """The ``mp_context`` of the harness's worker processes: spawned children that do not run the caller's
    main script, unless ``needs_main`` (the work pickles objects of ``__main__``); then plain ``spawn``, after
    :func:`refuse_unguarded_main` (raises :class:`MainGuardMissing`)."""
    if needs_main:
        refuse_unguarded_main()
        return multiprocessing.get_context("spawn")
    if sys.platform == "win32":  # no posix Popen to tell: the children import the script (guard it on Windows)
        return multiprocessing.get_context("spawn")
    return _ScriptFreeContext()


def defined_in_main(obj: Any) -> bool:
    """Whether ``obj`` (a class) lives in the caller's main module, so that a worker needs that module."""
    return obj is not None and getattr(obj, "__module__", None) == "__main__"


def refuse_unguarded_main() -> None:
    """Raise :class:`MainGuardMissing` when the main module is a script whose running top-level statement is not
    under ``if __name__ == "__main__":`` (a spawned worker would run it again), or has no file at all (a notebook
    or ``python -``: a worker cannot import what the work needs from it)."""
    main = sys.modules["__main__"]
    path = getattr(main, "__file__", None)
    if getattr(getattr(main, "__spec__", None), "name", None):  # python -m: imported by name, never re-run
        return
    if path is None:
        raise MainGuardMissing(
            "the adapter class is defined in an interactive session (a notebook, python -): worker processes "
            "cannot import it; define it in a module, or run without workers="
        )
    frame = _top_level_frame(main.__dict__)
    if frame is not None and not _guarded(Path(path), frame.f_lineno):
        raise MainGuardMissing(
            f"{path}: the adapter class is defined in this script, so each worker process runs it again; put "
            'the script\'s calls under `if __name__ == "__main__":` (or define the class in a module)'
        )


def _top_level_frame(main_globals: dict) -> FrameType | None:
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if frame.f_globals is main_globals and frame.f_code.co_name == "<module>":
            return frame
        frame = frame.f_back
    return None


def _guarded(path: Path, line: int) -> bool:
    """Whether ``line`` of the script ``path`` lies in the body of an ``if __name__ == "__main__":``."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return True  # cannot tell: let the run go (the workers' own errors will say)
    return any(
        isinstance(node, ast.If)
        and _is_main_test(node.test)
        and node.body[0].lineno <= line <= (node.body[-1].end_lineno or line)
        for node in ast.walk(tree)
    )


def _is_main_test(test: ast.expr) -> bool:
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    names = {side.id for side in sides if isinstance(side, ast.Name)}
    values = {side.value for side in sides if isinstance(side, ast.Constant)}
    return names == {"__name__"} and values == {"__main__"}
