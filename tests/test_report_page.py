"""The leaderboard page as a team reads it (issue 72): rendered by headless Chromium at 1280×800, then measured —
no horizontal scroll, no table whose numbers are all zero, no note repeated row after row, every chart an SVG
with its axes labelled — for the demo's runs and for twenty runs over four datasets (languages, a stream, speed
comparisons); and the markdown of 1,000 runs fits a pull request's comment and parses as a table."""

from __future__ import annotations

import html
import json
import re
import subprocess
from pathlib import Path

import pytest

from .conftest import BROWSER, HEADLESS
from .report_runs import demo_like_runs, many_runs

#: measured in the page after it loaded, written into the DOM for --dump-dom to read back
PROBE = """<script>
const number = t => /^[-+−]?\\d+(\\.\\d+)?$/.test(t) ? Number(t.replace('−', '-')) : null;
const tables = Array.from(document.querySelectorAll('table')).map(table => {
  const rows = Array.from(table.tBodies[0] ? table.tBodies[0].rows : []);
  const cells = rows.map(r => Array.from(r.cells, c => (c.dataset.value ?? c.textContent).trim()));
  const numbers = cells.flat().map(number).filter(v => v !== null);
  const long = cells.flat().filter(t => t.length >= 40 && / /.test(t));
  const repeated = long.filter((t, i) => long.indexOf(t) !== i);
  return {cls: table.className, rows: rows.length, numbers, repeated,
          busyNotes: cells.flat().filter(t => /busy machine/.test(t)).length};
});
const charts = Array.from(document.querySelectorAll('svg')).map(svg => ({
  cls: svg.getAttribute('class'), x: (svg.querySelector('text.x-label') || {}).textContent || null,
  y: (svg.querySelector('text.y-label') || {}).textContent || null, ticks: svg.querySelectorAll('.axis text').length}));
const out = document.createElement('pre'); out.id = 'probe';
out.textContent = JSON.stringify({width: window.innerWidth, scrollWidth: document.documentElement.scrollWidth,
                                  tables, charts});
document.body.appendChild(out);
</script>"""

FLAGS = [*HEADLESS, "--hide-scrollbars", "--window-size=1280,800"]


def measure(page: Path, tmp_path: Path) -> dict:
    """The page's measurements in Chromium at 1280×800 (the probe above appended to a copy of it)."""
    if BROWSER is None:
        pytest.skip("no Chromium: apt-get install chromium (the CI script installs it)")
    probed = tmp_path / f"probed-{page.stem}.html"
    probed.write_text(page.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"), encoding="utf-8")
    done = subprocess.run(
        [BROWSER, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", probed.as_uri()],
        capture_output=True,
        text=True,
        timeout=180,
        check=True,
    )
    found = re.search(r'<pre id="probe">(.*?)</pre>', done.stdout, re.S)
    assert found, done.stderr[-2000:]
    return json.loads(html.unescape(found.group(1)))


def screenshot(page: Path, out: Path, tmp_path: Path, scroll_to: str = "") -> Path:
    """A 1280×800 PNG of the page's first screen (or of the screen starting at the element ``scroll_to``)."""
    shown = page
    if scroll_to:
        shown = tmp_path / f"at-{scroll_to}.html"
        script = (  # the elements above it hidden: the screenshot starts there
            f"<script>let n = document.getElementById('{scroll_to}').previousElementSibling;"
            "while (n) { n.style.display = 'none'; n = n.previousElementSibling; }</script>"
        )
        shown.write_text(page.read_text(encoding="utf-8").replace("</body>", script + "</body>"), encoding="utf-8")
    subprocess.run(
        [
            BROWSER or "chromium",
            *FLAGS,
            f"--user-data-dir={tmp_path / 'profile'}",
            f"--screenshot={out}",
            shown.as_uri(),
        ],
        capture_output=True,
        timeout=180,
        check=True,
    )
    return out


def _report(runs: Path, references: list[str], out: Path) -> Path:
    from whisperbench import api

    api.report(runs, out=out, references=references)
    return out


def _check_page(probe: dict, streaming: bool) -> None:
    assert probe["width"] == 1280, probe["width"]
    assert probe["scrollWidth"] <= 1280, probe["scrollWidth"]  # no horizontal scroll
    for table in probe["tables"]:
        numbers = table["numbers"]
        assert not numbers or any(numbers), table["cls"]  # no table of zeros
        assert table["repeated"] == [], (table["cls"], table["repeated"][:3])  # no note said row after row
        assert table["busyNotes"] == 0, table["cls"]  # the busy machine: one line per section, not per cell
    kinds = {chart["cls"].split()[1] for chart in probe["charts"]}
    assert {"wer-rtfx", "qoi"} <= kinds, kinds
    for chart in probe["charts"]:
        assert chart["x"] and chart["ticks"] >= 3, chart  # a labelled value axis with ticks
        assert "%" in chart["x"] or " s " in chart["x"] or "×" in chart["x"] or "ms" in chart["x"], chart  # its unit
        if "wer-rtfx" in chart["cls"]:
            assert chart["y"] == "WER % (lower is better)", chart
    if streaming:
        assert {"lang-error", "lang-qoi", "speed-ratio", "latency"} <= kinds, kinds


def test_the_demo_report_reads_at_1280_px(tmp_path):
    runs, references = demo_like_runs(tmp_path)
    page = _report(runs, references, tmp_path / "demo.html")
    _check_page(measure(page, tmp_path), streaming=False)
    text = page.read_text(encoding="utf-8")
    assert text.index('id="overview"') < text.index('class="sortable leaderboard"')  # the answer first
    assert "No loops, bursts or output on non-speech in any run." in text  # all zero: one sentence
    assert 'class="sortable hallucination"' not in text
    assert "⚠ busy" not in text  # recorded runs: times from their device, not this machine's load


def test_twenty_runs_over_four_datasets_read_at_1280_px(tmp_path):
    runs, references = many_runs(tmp_path)
    assert len([p for p in runs.iterdir() if p.is_dir()]) >= 18
    page = _report(runs, references, tmp_path / "many.html")
    probe = measure(page, tmp_path)
    _check_page(probe, streaming=True)
    text = page.read_text(encoding="utf-8")
    glance = text[text.index('id="overview"') : text.index('id="form-short"')]
    assert glance.count("<tr>") == 1 + 4  # a row per dataset
    assert 'href="#explore-faster-whisper-int8-tiny-shortform"' in glance  # regressions linked to the explorer
    assert 'id="explore-faster-whisper-int8-tiny-shortform"' in text
    speed = text[text.index('id="section-speed"') :]
    speed = speed[: speed.index("</table>")]
    assert "→ 0.00" not in speed  # no "first result" for a run without times (was 0.50 → 0.00)
    headers = re.findall(
        r"<th[^>]*>(.*?)</th>", text[text.index('class="sortable leaderboard"') :].split("</thead>")[0]
    )
    assert len(headers) <= 9, headers


def test_the_markdown_of_1000_runs_fits_a_pull_request_and_parses_as_a_table(tmp_path):
    """1,000 runs over 40 datasets (the frame of real runs, repeated under new names): the whole markdown document
    stays under GitHub's 65,536 characters, has no HTML entity, and every table line has its header's cells."""
    import pandas as pd

    from whisperbench.reports.document import within_limit
    from whisperbench.reports.leaderboard import leaderboard_frame, pick_references, render_markdown
    from whisperbench.reports.sections import sections_markdown
    from whisperbench.store.runs import list_runs

    runs_dir, names = demo_like_runs(tmp_path)
    runs = list_runs(str(runs_dir))
    references = pick_references(runs, names)
    frame = leaderboard_frame(runs, references)
    copies = []
    for number in range(1000 // len(frame) + 1):
        copy = frame.copy()
        copy["Run"] = [f"{run}-variant-{number:03d}" for run in frame["Run"]]
        copy["Dataset"] = [f"{dataset}-{number % 40:02d}" for dataset in frame["Dataset"]]
        copy["Implementation"] = [f"{name} --beam {number % 7}" for name in frame["Implementation"]]
        copies.append(copy)
    thousand = pd.concat(copies, ignore_index=True).iloc[:1000]
    text = within_limit(
        render_markdown(thousand, references, stamp="2026-11-29 00:00 UTC"), [lambda: sections_markdown(thousand)]
    )
    assert len(text) < 65_536, len(text)
    assert not re.search(r"&(#\d+|[a-z]+);", text)  # no HTML entity (the old "Ratio &gt; 2.4")
    tables = [block for block in text.split("\n\n") if block.startswith("| ")]
    assert tables
    rows = 0
    for block in tables:
        lines = block.splitlines()
        width = len(re.split(r"(?<!\\)\|", lines[0]))
        assert re.fullmatch(r"\|(---\|)+", lines[1]), lines[1]
        assert all(len(re.split(r"(?<!\\)\|", line)) == width for line in lines), block[:300]
        rows += len(lines) - 2
    print(f"markdown of 1,000 runs: {len(text)} characters, {rows} runs in its tables")  # docs/reports.md
    assert 200 <= rows < 1000  # as many runs as fit, the rest said to be in the HTML report
    assert "more run(s), the worst of their dataset on WER, left out" in text
    assert all(f"`{run}`" in text for run in thousand[thousand["Reference"].astype(bool)]["Run"][:5])  # references kept


def test_a_recorded_runs_rtfx_is_not_marked_busy_by_the_scoring_machines_load(tmp_path):
    """Issue 66's smaller item: a recorded run's times came from its device, so the load of the machine that scored
    it says nothing of them; the same run with its times taken here on that busy machine is marked, once per table
    with the load; a run without times has no wait for a first result in the speed table (issue 70's item: it
    read "0.50 → 0.00")."""
    from whisperbench.reports.leaderboard import leaderboard_frame
    from whisperbench.reports.speed import busy_why, speed_rows
    from whisperbench.store.runs import list_runs, open_run

    runs_dir, references = many_runs(tmp_path)
    name = "faster-whisper-int8-tiny-shortform"
    load = {"busy": True, "why": "other processes kept 1.7 of 2 CPU(s) busy", "other_cpus_busy": 1.7}
    info_path, summary_path = runs_dir / name / "run.json", runs_dir / name / "summary.json"
    info, summary = json.loads(info_path.read_text()), json.loads(summary_path.read_text())
    info_path.write_text(json.dumps(dict(info, machine_load=load)))
    summary_path.write_text(json.dumps(dict(summary, rtfx_reliable=False)))
    assert busy_why(open_run(name, runs_dir)) is None  # recorded on a device: not this machine's load
    timed_here = dict(info, machine_load=load, adapter="faster-whisper")
    timed_here["adapter_info"] = {k: v for k, v in info["adapter_info"].items() if k != "timings_from"}
    info_path.write_text(json.dumps(timed_here))
    assert busy_why(open_run(name, runs_dir)) == load["why"]
    runs = list_runs(str(runs_dir))
    chosen = {run.dataset_hash: run for run in runs if run.name in references}
    page = _report(runs_dir, references, tmp_path / "busy.html").read_text(encoding="utf-8")
    # once per section (the line above its leaderboard table, the speed section's line) and the ⚠'s tooltip
    assert page.count(load["why"]) == 3
    frame = leaderboard_frame(runs, chosen)
    assert frame.loc[frame["Run"] == name, "Busy"].item() == load["why"]
    assert frame.loc[frame["Run"] != name, "Busy"].isna().all()
    untimed = next(row for row in speed_rows(runs, chosen) if row["run"] == "whisperlivekit-1s")
    assert untimed["first result s"] is None
