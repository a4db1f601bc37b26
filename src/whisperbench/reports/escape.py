"""Text from runs (labels, ids, dataset names) made safe for each output format.

Labels, ids and dataset names come from users' manifests and command lines: a ``|`` or a newline in
one must not add a column or a forged row to a markdown table, nor a forged verdict line to the gate's
output. HTML is escaped by :mod:`html`, XML by ElementTree (plus :func:`one_line` for the control characters XML 1.0
cannot hold at all) and CSV by pandas, after :func:`spreadsheet_safe`; the rest is here.

>>> md_cell("a|b\\nc")
'a\\\\|b c'
>>> one_line("x\\ngate: PASS")
'x\\\\ngate: PASS'
"""

from __future__ import annotations

import unicodedata


def md_cell(value: object) -> str:
    """A markdown table cell: pipes escaped, HTML's ``<``, ``>`` and ``&`` backslash-escaped (CommonMark's escapes of
    ASCII punctuation: a label like ``<script>`` is text, not markup, wherever the markdown is rendered, and no HTML
    entity shows where it is pasted as plain text), line breaks and other control characters made spaces.

    >>> md_cell("<script> & co")
    '\\\\<script\\\\> \\\\& co'
    """
    text = "".join(" " if unicodedata.category(ch).startswith("C") else ch for ch in str(value))
    text = text.replace("\\", "\\\\")
    for mark in "&<>|":
        text = text.replace(mark, "\\" + mark)
    return text


def md_heading(value: str) -> str:
    """A heading this program writes (``Ratio > 2.4``), as a markdown table cell: pipes escaped only.

    >>> md_heading("Ratio > 2.4")
    'Ratio > 2.4'
    """
    return value.replace("|", "\\|")


def one_line(value: object) -> str:
    """Plain-text output on one line: control characters shown as escapes (``\\n``), everything else kept."""
    return "".join(
        ch.encode("unicode_escape").decode("ascii") if unicodedata.category(ch).startswith("C") else ch
        for ch in str(value)
    )


#: a CSV cell a spreadsheet would run as a formula starts with one of these (OWASP's "CSV injection" list)
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(frame):
    """A copy of a DataFrame whose text cells cannot run as spreadsheet formulas: a cell that starts with
    ``= + - @``, a tab or a carriage return gets a leading apostrophe (OWASP's advice for CSV files opened in Excel,
    LibreOffice or Google Sheets; the apostrophe is shown by a text reader). Numbers are left as they are.

    >>> import pandas as pd
    >>> spreadsheet_safe(pd.DataFrame({"id": ["=cmd|' /C calc'!A0", "ok"], "wer": [-1.0, 2.0]})).to_dict("list")
    {'id': ["'=cmd|' /C calc'!A0", 'ok'], 'wer': [-1.0, 2.0]}
    """
    from pandas.api.types import is_numeric_dtype

    out = frame.copy()
    for column in out.columns:
        if not is_numeric_dtype(out[column]):
            out[column] = out[column].map(
                lambda v: "'" + v if isinstance(v, str) and v.startswith(FORMULA_STARTS) else v
            )
    return out
