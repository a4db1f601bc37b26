"""The HTML report as a person sees it: rendered by headless Chromium (JavaScript on), then read back."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from whisperbench.cli import main
from whisperbench.reports.html import alignment_html

from .conftest import record_run

BROWSER = next((b for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)
EVIL = '<script>document.title="pwned"</script> & <b>bold</b>'


@pytest.fixture
def report(tmp_path, tiny_rows, tiny_short):
    runs = tmp_path / "runs"

    def score(name, edit):
        record_run(runs, tiny_short, tiny_rows, name, edit)

    score("ref", lambda r: r["text"])
    score("cand", lambda r: EVIL if r["id"] == "jfk" else r["text"].replace("HOUR", "OUR"))
    out = tmp_path / "report.html"
    assert main(["report", "--runs-dir", str(runs), "--reference", "ref", "--out", str(out)]) == 0
    return out


def _render(path, tmp_path) -> str:
    if BROWSER is None:
        pytest.skip("no Chromium: apt-get install chromium (the CI script installs it)")
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}"]
    shot = tmp_path / "report.png"
    subprocess.run([BROWSER, *flags, f"--screenshot={shot}", "--window-size=1200,1600", path.as_uri()],
                   capture_output=True, timeout=120, check=True)
    assert shot.stat().st_size > 10_000  # a page was painted
    dom = subprocess.run([BROWSER, *flags, "--dump-dom", path.as_uri()], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    return dom


def test_report_in_a_browser_shows_tables_regressions_and_escaped_text(report, tmp_path):
    dom = _render(report, tmp_path)
    assert 'data-ready="yes"' in dom  # the page's script ran
    assert "<title>Whisper leaderboard</title>" in dom  # the transcript's script did not retitle the page
    assert 'class="sortable leaderboard"' in dom and "Short-form" in dom and "Long-form" in dom
    assert 'class="plot wer-rtfx"' in dom or "No timed runs to plot" in dom
    assert 'class="plot qoi"' in dom
    # both regressed examples are in the explorer, the worst first
    jfk_row = dom.index('id="cand--jfk"')
    other_row = dom.index('id="cand--1089-134691-0001"')
    assert jfk_row < other_row
    # the transcript with markup is shown as text, escaped
    assert "&lt;script&gt;document.title=" in dom and "&lt;b&gt;bold&lt;/b&gt;" in dom
    assert "<b>bold</b>" not in dom
    # the substitution HOUR -> OUR is marked in the alignment
    assert '<span class="sub" title="was: hour">our</span>' in dom


def test_alignment_marks_each_error_kind():
    assert alignment_html("the cat sat", "the bat sat", "english") == 'the <span class="sub" title="was: cat">bat</span> sat'
    assert alignment_html("the cat sat", "the sat", "english") == 'the <span class="del">cat</span> sat'
    assert alignment_html("the cat", "the cat sat", "english") == 'the cat <span class="ins">sat</span>'
    assert alignment_html("a b", "", "english").count('class="del"') == 2


def test_report_in_a_browser_breaks_results_down_by_language(tmp_path, tiny_rows, local_manifest):
    """Labelled examples get a By-language table (headline metric, QoI per language, the macro row)."""
    import re

    labels = ["en", "English", "eng", "de", "German", "deu"]  # any spelling: two languages, three examples each
    manifest = local_manifest([dict(r, language=label) for r, label in zip(tiny_rows, labels)])
    runs = tmp_path / "runs"
    for name, edit in (("ref", lambda r: r["text"]), ("cand", lambda r: "" if r is tiny_rows[3] else r["text"])):
        record_run(runs, manifest, tiny_rows, name, edit)
    out = tmp_path / "report.html"
    assert main(["report", "--runs-dir", str(runs), "--reference", "ref", "--out", str(out)]) == 0
    dom = _render(out, tmp_path)
    table = dom[dom.index('class="sortable languages"'):]
    table = table[:table.index("</table>")]
    rows = {tuple(re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row)[:7:6])
            for row in re.findall(r"<tr[^>]*>(.*?)</tr>", table)}
    # cand emptied one German example: QoI 2 of 3 in de, 3 of 3 in en, macro the mean
    assert ("de", "66.7") in rows and ("en", "100.0") in rows and ("macro", "83.3") in rows, rows
