"""Reports read run stores only: comparison tables, the markdown leaderboard, the gate (exports imported on first
use: ``whisperbench.core.lazy_exports``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.lazy_exports import lazy_exports

if TYPE_CHECKING:  # re-exported for type checkers; at run time __getattr__ imports them
    from .compare import Comparison as Comparison
    from .compare import compare_runs as compare_runs
    from .compare import comparison_table as comparison_table
    from .gate import (
        GateResult as GateResult,
    )
    from .gate import (
        evaluate_gate as evaluate_gate,
    )
    from .gate import (
        format_gate as format_gate,
    )
    from .gate import (
        junit_xml as junit_xml,
    )
    from .leaderboard import (
        flat_frame as flat_frame,
    )
    from .leaderboard import (
        leaderboard_frame as leaderboard_frame,
    )
    from .leaderboard import (
        pick_references as pick_references,
    )
    from .leaderboard import (
        render_markdown as render_markdown,
    )

_MODULES = {
    ".compare": ("Comparison", "compare_runs", "comparison_table"),
    ".gate": ("GateResult", "evaluate_gate", "format_gate", "junit_xml"),
    ".leaderboard": ("flat_frame", "leaderboard_frame", "pick_references", "render_markdown"),
}
_WHERE = {name: module for module, names in _MODULES.items() for name in names}
__all__ = list(_WHERE)
__getattr__ = lazy_exports(__name__, _WHERE)
