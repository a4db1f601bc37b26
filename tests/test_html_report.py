"""The HTML report as a person sees it: rendered by headless Chromium (JavaScript on), then read back."""

from __future__ import annotations

import re
import subprocess

import pytest

from whisperbench.cli import main
from whisperbench.reports.html import alignment_html

from .conftest import BROWSER, HEADLESS, record_run

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
    flags = [*HEADLESS, "--disable-quic", f"--user-data-dir={tmp_path / 'profile'}"]
    shot = tmp_path / "report.png"
    subprocess.run(
        [BROWSER, *flags, f"--screenshot={shot}", "--window-size=1200,1600", path.as_uri()],
        capture_output=True,
        timeout=120,
        check=True,
    )
    assert shot.stat().st_size > 10_000  # a page was painted
    dom = subprocess.run(
        [BROWSER, *flags, "--dump-dom", path.as_uri()], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    return dom


def test_report_in_a_browser_shows_tables_regressions_and_escaped_text(report, tmp_path):
    dom = _render(report, tmp_path)
    assert 'data-ready="yes"' in dom  # the page's script ran
    assert "<title>Whisper leaderboard</title>" in dom  # the transcript's script did not retitle the page
    assert 'class="sortable leaderboard"' in dom and "Short-form" in dom and "Long-form" in dom
    assert 'class="chart wer-rtfx"' in dom or "No timed runs to plot" in dom
    assert 'class="chart qoi"' in dom
    qoi_plot = dom[dom.index('class="chart qoi"') : dom.index("</svg>", dom.index('class="chart qoi"'))]
    assert qoi_plot.count("(reference)") >= 1 and 'class="ref"' in qoi_plot  # the reference's bar set apart
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
    assert (
        alignment_html("the cat sat", "the bat sat", "english")
        == 'the <span class="sub" title="was: cat">bat</span> sat'
    )
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
    table = dom[dom.index('class="sortable languages"') :]
    table = table[: table.index("</table>")]
    rows = {
        tuple(re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row)[:7:6])
        for row in re.findall(r"<tr[^>]*>(.*?)</tr>", table)
    }
    # cand emptied one German example: QoI 2 of 3 in de, 3 of 3 in en, macro the mean
    assert ("de", "66.7") in rows and ("en", "100.0") in rows and ("macro", "83.3") in rows, rows


PROBE_HEAD = """<script>window.__errors = [];
window.addEventListener('error', e => window.__errors.push('uncaught: ' + e.message));
const __consoleError = console.error;
console.error = (...args) => { window.__errors.push('console.error: ' + args.join(' ')); __consoleError(...args); };
</script>"""
PROBE_CLICKS = """<script>
const results = [];
document.querySelectorAll('table.sortable').forEach((table, t) => table.tHead.querySelectorAll('th').forEach(th => {
  for (const click of [1, 2]) {
    th.click();  // a real click event on the header, as a person's
    const col = th.cellIndex;
    results.push({table: t, header: th.textContent, click, dir: th.dataset.dir || null,
                  values: Array.from(table.tBodies[0].rows,
                                     r => r.cells[col] ? (r.cells[col].dataset.value ?? r.cells[col].textContent).trim()
                                                       : null)});
  }
}));
const out = document.createElement('pre'); out.id = 'probe';
out.textContent = JSON.stringify({errors: window.__errors, results});
document.body.appendChild(out);
</script>"""


def _click_every_header(page, tmp_path) -> tuple[dict, str]:
    """The report with a probe: every sortable header clicked twice in headless Chromium, each column's order
    read back after each click, and every uncaught error or console.error collected."""
    import html
    import json
    import re

    if BROWSER is None:
        pytest.skip("no Chromium: apt-get install chromium (the CI script installs it)")
    text = page.read_text(encoding="utf-8")
    probed = tmp_path / "probed.html"
    probed.write_text(
        text.replace("<head>", "<head>" + PROBE_HEAD, 1).replace("</body>", PROBE_CLICKS + "</body>"), encoding="utf-8"
    )
    flags = [*HEADLESS, "--enable-logging=stderr", "--v=0", f"--user-data-dir={tmp_path / 'profile-probe'}"]
    done = subprocess.run(
        [BROWSER, *flags, "--dump-dom", probed.as_uri()], capture_output=True, text=True, timeout=120, check=True
    )
    found = re.search(r'<pre id="probe">(.*?)</pre>', done.stdout, re.S)
    assert found, done.stdout[-2000:] + done.stderr[-2000:]
    return json.loads(html.unescape(found.group(1))), done.stderr


def _is_ordered(values: list, descending: bool) -> bool:
    present = [v for v in values if v != ""]
    assert values[len(present) :] == [""] * (len(values) - len(present)), values  # cells without a value last
    numbers = [float(v) for v in present]
    return numbers == sorted(numbers, reverse=descending)


def test_clicking_every_sortable_header_sorts_its_own_table_without_an_error(tmp_path, tiny_rows, local_manifest):
    """Leaderboard, By-language, speed table and two regression explorers: each header clicked twice (ascending, then
    descending); a numeric column reads back in order, a text column reversed by the second click; no error
    (the explorer's headers once took their column index across every table: a TypeError)."""
    labels = ["en", "en", "en", "de", "de", "de"]
    manifest = local_manifest([dict(r, language=label) for r, label in zip(tiny_rows, labels)])
    runs = tmp_path / "runs"
    record_run(runs, manifest, tiny_rows, "ref", lambda r: r["text"])
    record_run(runs, manifest, tiny_rows, "half", lambda r: " ".join(r["text"].split()[: len(r["text"].split()) // 2]))
    record_run(runs, manifest, tiny_rows, "typo", lambda r: r["text"].replace("THE", "A"))
    out = tmp_path / "report.html"
    assert main(["report", "--runs-dir", str(runs), "--reference", "ref", "--out", str(out), "--quiet"]) == 0
    probe, stderr = _click_every_header(out, tmp_path)
    assert probe["errors"] == [], probe["errors"]
    assert "Uncaught" not in stderr, stderr[-2000:]
    tables = {r["table"] for r in probe["results"]}
    # leaderboard, languages, speed, two explorers (hallucinations: all zero, one sentence instead of a table)
    assert len(tables) == 5, tables
    numeric_checked = 0
    for first, second in zip(probe["results"][::2], probe["results"][1::2]):
        assert first["header"] == second["header"] and (first["dir"], second["dir"]) == ("asc", "desc"), first
        assert None not in first["values"], first  # every row has the clicked column
        present = [v for v in first["values"] if v != ""]
        if present and all(re.fullmatch(r"[-+]?\d+(\.\d+)?(e[-+]?\d+)?", v) for v in present):
            assert _is_ordered(first["values"], False) and _is_ordered(second["values"], True), first
            numeric_checked += 1
        elif len(set(present)) == len(present):  # text: the second click reverses the first's order
            assert [v for v in second["values"] if v != ""] == present[::-1], (first, second)
    assert numeric_checked >= 10


def test_the_html_leaderboard_has_the_size_column_the_markdown_has(tmp_path, tiny_rows, tiny_short):
    """Size MB (the weights as loaded, from run.json) in both formats, under the same header (issue 39, item 5)."""
    import json

    runs = tmp_path / "runs"
    for name in ("ref", "cand"):
        record_run(runs, tiny_short, tiny_rows, name, lambda r: r["text"])
    info = json.loads((runs / "cand" / "run.json").read_text())
    info["adapter_info"]["weights"] = {"loaded_size_mb": 75.54}
    (runs / "cand" / "run.json").write_text(json.dumps(info))
    for fmt in ("md", "html"):
        assert main(["report", "--runs-dir", str(runs), "--reference", "ref", "--format", fmt, "--quiet"]) == 0
    page = (runs / "leaderboard.html").read_text()
    table = page[page.index('class="sortable leaderboard"') :]
    table = table[: table.index("</table>")]
    headers = [re.sub(r"<[^>]+>", "", h) for h in re.findall(r"<th[^>]*>(.*?)</th>", table)]
    rows = {
        run: re.findall(r"<td[^>]*>(.*?)</td>", row)
        for run, row in re.findall(r'<tr[^>]*data-run="([^"]*)"[^>]*>(.*?)</tr>', table)
    }
    sizes = {run: cells[headers.index("Size MB")] for run, cells in rows.items()}
    assert sizes == {"ref": "–", "cand": "75.5"}
    markdown = (runs / "leaderboard.md").read_text().splitlines()
    head = next(line for line in markdown if line.startswith("| Implementation"))
    column = [c.strip() for c in head.split("|")].index("Size MB")
    cand = next(line for line in markdown if "`cand`" in line)
    assert [c.strip() for c in cand.split("|")][column] == "75.5"
