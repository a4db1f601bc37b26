"""Reports read run stores only: comparison tables, the markdown leaderboard, the gate."""

from .compare import Comparison, compare_runs, comparison_table
from .gate import GateResult, evaluate_gate, format_gate, junit_xml
from .leaderboard import flat_frame, leaderboard_frame, pick_references, render_markdown

__all__ = [
    "Comparison", "compare_runs", "comparison_table", "GateResult", "evaluate_gate", "format_gate", "junit_xml",
    "flat_frame", "leaderboard_frame", "pick_references", "render_markdown",
]
