"""Text from runs (labels, ids, dataset names) made safe for each output format.

Labels, ids and dataset names come from users' manifests and command lines: a ``|`` or a newline in
one must not add a column or a forged row to a markdown table, nor a forged verdict line to the gate's
output. HTML is escaped by :mod:`html`, XML by ElementTree and CSV by pandas; these two cover the rest.

>>> md_cell("a|b\\nc")
'a\\\\|b c'
>>> one_line("x\\ngate: PASS")
'x\\\\ngate: PASS'
"""

from __future__ import annotations

import unicodedata


def md_cell(value: object) -> str:
    """A markdown table cell: pipes escaped, line breaks and other control characters made spaces."""
    text = "".join(" " if unicodedata.category(ch).startswith("C") else ch for ch in str(value))
    return text.replace("\\", "\\\\").replace("|", "\\|")


def one_line(value: object) -> str:
    """Plain-text output on one line: control characters shown as escapes (``\\n``), everything else kept."""
    return "".join(ch.encode("unicode_escape").decode("ascii") if unicodedata.category(ch).startswith("C") else ch
                   for ch in str(value))
