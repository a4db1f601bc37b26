"""The leaderboard document of a folder of runs, in each format ``whisperbench report`` writes.

One function per format takes the leaderboard frame, the runs and their references and returns the text to
write (markdown, a model card) or writes the file itself (HTML, CSV) and returns None. The markdown document is
every section the harness has: the leaderboard, languages, hallucinations, robustness, speed, timing and run-to-run
noise; a new section is one more call in :func:`markdown_document`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional, TypeAlias

if TYPE_CHECKING:  # the writers import what they use when they run: the CLI lists DOCUMENTS in --help
    import pandas as pd

    from ..store import StoredRun

References: TypeAlias = "dict[str, StoredRun]"
Writer: TypeAlias = "Callable[[pd.DataFrame, list[StoredRun], References, Path, str], Optional[str]]"


def markdown_document(frame: pd.DataFrame, runs: list[StoredRun], references: References, out: Path, title: str) -> str:
    """The leaderboard and every per-run section as one markdown document (``out`` is not written here)."""
    from . import render_markdown
    from .hallucination import render_hallucination_markdown
    from .languages import language_frame, render_language_markdown
    from .noise import noise_frame, render_noise_markdown
    from .robustness import render_robustness_markdown, robustness_frame
    from .speed import render_speed_markdown
    from .streaming import render_streaming_markdown
    from .timing import render_timing_markdown, timing_frame

    return (
        render_markdown(frame, references, title=title)
        + render_language_markdown(language_frame(runs, references))
        + render_hallucination_markdown(frame)
        + render_robustness_markdown(robustness_frame(runs, references))
        + render_speed_markdown(runs, references)
        + render_timing_markdown(timing_frame(runs))
        + render_streaming_markdown(runs, references)
        + render_noise_markdown(noise_frame(runs))
    )


def html_document(frame: pd.DataFrame, runs: list[StoredRun], references: References, out: Path, title: str) -> None:
    """The HTML report (sortable tables, plots, the example explorer), written to ``out``."""
    from .html import write_html

    write_html(str(out), frame, runs, references, title)


def csv_document(frame: pd.DataFrame, runs: list[StoredRun], references: References, out: Path, title: str) -> None:
    """The leaderboard as one flat CSV table, written to ``out``."""
    from . import flat_frame
    from .escape import spreadsheet_safe

    spreadsheet_safe(flat_frame(frame)).to_csv(out, index=False)


def model_card_document(
    frame: pd.DataFrame, runs: list[StoredRun], references: References, out: Path, title: str
) -> str:
    """A Hugging Face model-card section: model-index metadata and a WER / QoI / size table per dataset."""
    from .model_card import render_model_card

    return render_model_card(frame, title=title)


#: report formats by name: each returns the text to write, or writes ``out`` itself and returns None
DOCUMENTS: dict[str, Writer] = {
    "md": markdown_document,
    "html": html_document,
    "csv": csv_document,
    "hf": model_card_document,
}


def document_format(out: Path, fmt: Optional[str]) -> str:
    """The format asked for, else the one ``out``'s extension names; an unknown one is an error.

    >>> document_format(Path("board.html"), None), document_format(Path("x.md"), "hf")
    ('html', 'hf')
    """
    from ..errors import WhisperbenchError

    chosen = fmt or out.suffix.lstrip(".").lower()
    if chosen not in DOCUMENTS:
        raise WhisperbenchError(
            f"unknown report format {chosen!r} (use .md, .html or .csv, or --format {'|'.join(DOCUMENTS)})"
        )
    return chosen
