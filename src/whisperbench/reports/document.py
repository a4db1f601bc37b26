"""The leaderboard document of a folder of runs, in each format ``whisperbench report`` writes.

One function per format takes the leaderboard frame, the runs and their references and returns the text to
write (markdown, a model card) or writes the file itself (HTML, CSV) and returns None. The markdown document is
every section the harness has: the leaderboard, languages, each metric's own section (hallucinations, timing:
:mod:`whisperbench.reports.sections`, from the registry), robustness, speed, streaming and run-to-run noise.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

from ..core.registry import Registry

if TYPE_CHECKING:  # the writers import what they use when they run: the CLI lists DOCUMENTS in --help
    import pandas as pd

    from ..store.runs import StoredRun

References: TypeAlias = "dict[str, StoredRun]"
Writer: TypeAlias = "Callable[[pd.DataFrame, list[StoredRun], References, Path, str], str | None]"


def markdown_document(frame: pd.DataFrame, runs: list[StoredRun], references: References, out: Path, title: str) -> str:
    """The leaderboard and every per-run section as one markdown document (``out`` is not written here)."""
    from . import render_markdown
    from .keywords import render_keywords_markdown
    from .languages import language_frame, render_language_markdown
    from .noise import noise_frame, render_noise_markdown
    from .robustness import render_robustness_markdown, robustness_frame
    from .sections import sections_markdown
    from .speed import render_speed_markdown
    from .streaming import render_streaming_markdown

    return within_limit(
        render_markdown(frame, references, title=title),
        [
            lambda: render_language_markdown(language_frame(runs, references)),
            lambda: sections_markdown(frame),
            lambda: render_keywords_markdown(runs),
            lambda: render_robustness_markdown(robustness_frame(runs, references)),
            lambda: render_speed_markdown(runs, references),
            lambda: render_streaming_markdown(runs, references),
            lambda: render_noise_markdown(noise_frame(runs)),
        ],
    )


def within_limit(head: str, sections: list[Callable[[], str]], limit: int | None = None) -> str:
    """``head`` and each section after it while the whole stays under ``limit`` characters (default
    :data:`~whisperbench.reports.leaderboard.MARKDOWN_LIMIT`: what a pull request's comment or a CI job summary
    holds); a section that would not fit is one line naming it and pointing at the HTML report.

    >>> within_limit("# t\\n", [lambda: "\\n## A\\n\\n" + "x" * 50 + "\\n"], limit=30)
    '# t\\n\\n## A\\n\\n_Left out to fit a pull request (51 characters): the HTML report has it._\\n'
    """
    from .leaderboard import MARKDOWN_LIMIT

    limit = MARKDOWN_LIMIT if limit is None else limit
    text = head
    for make in sections:
        part = make()
        if len(text) + len(part) > limit:
            title = next((line for line in part.splitlines() if line.startswith("## ")), "## (a section)")
            size = len(part) - len(title) - 3
            part = f"\n{title}\n\n_Left out to fit a pull request ({size} characters): the HTML report has it._\n"
        text += part
    return text


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


@dataclass(frozen=True)
class Document:
    """A kind of report ``whisperbench report`` writes: its ``name`` (``--format NAME``), the file ``suffix`` that
    chooses it, a one-line ``description`` and ``write`` (:data:`Writer`: returns the text to write, or writes the
    file itself and returns None)."""

    name: str
    suffix: str
    description: str
    write: Writer


#: report formats by name: built in md, html, csv and hf; others from installed packages (entry-point group
#: ``whisperbench.documents``, pointing at a :class:`Document`)
DOCUMENTS: Registry[Document] = Registry(
    "report format",
    builtin=lambda: [
        Document("md", ".md", "the leaderboard and every section as markdown", markdown_document),
        Document("html", ".html", "sortable tables, plots and the example explorer", html_document),
        Document("csv", ".csv", "the leaderboard as one flat table", csv_document),
        Document("hf", "", "a Hugging Face model-card section", model_card_document),
    ],
    kind=Document,
    group="whisperbench.documents",
)


def document_format(out: Path, fmt: str | None) -> str:
    """The format asked for, else the one ``out``'s extension names; an unknown one is an error.

    >>> document_format(Path("board.html"), None), document_format(Path("x.md"), "hf")
    ('html', 'hf')
    """
    from ..errors import WhisperbenchError

    if fmt:
        return DOCUMENTS.get(fmt).name
    suffix = out.suffix.lower()
    chosen = next((d.name for d in DOCUMENTS.items() if d.suffix and d.suffix == suffix), None)
    if chosen is None:
        suffixes = ", ".join(d.suffix for d in DOCUMENTS.items() if d.suffix)
        raise WhisperbenchError(
            f"unknown report format {suffix.lstrip('.')!r} (use {suffixes}, or --format {'|'.join(DOCUMENTS.names())})"
        )
    return chosen
