"""The commands README.md and docs/*.md show are true: every one parses with today's parser and names real
adapters and options, the command-line reference equals the parser, and the README's tour and its
own-model session run as written and print what the README shows."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
SHELL_BLOCKS = ("bash", "sh", "console", "")


def _logical_lines(body: str, console: bool) -> list[str]:
    """The block's commands: continuation lines joined; in a console block only the ``$`` lines."""
    lines, pending = [], ""
    for raw in body.splitlines():
        if console and not pending:
            if not raw.startswith("$ "):
                continue
            raw = raw[2:]
        line = pending + raw
        if line.rstrip().endswith("\\"):
            pending = line.rstrip()[:-1]  # as bash joins them: the backslash and the newline go
            continue
        pending = ""
        lines.append(line)
    return lines


def _words(line: str, variables: dict[str, str]) -> list[str]:
    line = re.sub(r"\$\{?(\w+)\}?", lambda m: variables.get(m.group(1), "VALUE"), line)
    try:
        return shlex.split(line, comments=True)
    except ValueError:  # a quote left open by a heredoc or an elided line: not a command to check
        return []


def _assignments(lines: list[str], variables: dict[str, str]) -> None:
    """``R="--model tiny.en …"`` and ``M=$(whisperbench perturb …)`` lines of a block, kept for ``$R`` / ``$M``."""
    for line in lines:
        match = re.match(r"^(\w+)=(\$\(.*\)|\"[^\"]*\"|'[^']*'|\S+)\s*(#.*)?$", line.strip())
        if match:
            value = match.group(2)
            variables[match.group(1)] = "sets/manifest.jsonl" if value.startswith("$(") else value.strip("\"'")


def documented_commands() -> list[tuple[str, list[str]]]:
    """Every ``whisperbench …`` command in a shell block of README.md and docs/*.md: (where, argv)."""
    found = []
    for page in PAGES:
        for match in FENCE.finditer(page.read_text(encoding="utf-8")):
            lang, body = match.group(1), match.group(2)
            if lang not in SHELL_BLOCKS:
                continue
            lines = _logical_lines(body, console=lang == "console")
            variables: dict[str, str] = {}
            _assignments(lines, variables)
            for line in lines:
                words = [w.rstrip(")") if w.endswith(")") else w for w in _words(line, variables)]
                words = [w.removeprefix("$(") for w in words]
                if "whisperbench" not in words or "..." in words:
                    continue  # not ours, or elided on purpose (`whisperbench run ... --backend ray`)
                argv = _without_optional_parts(words[words.index("whisperbench") + 1 :])
                found.append((f"{page.relative_to(ROOT)}: {line.strip()[:90]}", argv))
    return found


def _without_optional_parts(argv: list[str]) -> list[str]:
    """``[--json]`` and ``[--a 5]`` shown as optional in a runnable line: checked without them."""
    kept, depth = [], 0
    for word in argv:
        if word.startswith("["):
            depth += 1
        if depth == 0:
            kept.append(word)
        if word.endswith("]") and depth:
            depth -= 1
    return kept


def _option_problem(argv: list[str], args) -> str:
    """What is wrong with the adapter or the ``-o`` options a documented command names, or ''."""
    from whisperbench.adapters import get_adapter, registry
    from whisperbench.adapters.base import DecodingOptions
    from whisperbench.adapters.options import parse_options
    from whisperbench.errors import WhisperbenchError

    if args.command == "sweep":
        from whisperbench.cli.sweep import names
        from whisperbench.harness.sweep import DEFAULT_IMPLEMENTATIONS, plan_sweep

        try:
            plan_sweep(names(args.implementations) or DEFAULT_IMPLEMENTATIONS, names(args.variants))
        except WhisperbenchError as exc:
            return str(exc)
    adapter = getattr(args, "adapter", None)
    pairs = list(getattr(args, "option", None) or [])
    if adapter and adapter not in registry():
        return f"no adapter {adapter}"
    try:
        extra = DecodingOptions.from_pairs(pairs).extra
        if adapter:
            parse_options(adapter, get_adapter(adapter).options, extra)
        else:  # sweep: every implementation gets them; each key must be some adapter's option
            unknown = [k for k in extra if not any(k in cls.options for cls in registry().values())]
            if unknown:
                return f"no adapter has option(s) {unknown}"
    except WhisperbenchError as exc:
        return str(exc)
    return ""


def test_the_extraction_finds_the_documented_commands():
    commands = documented_commands()
    where = {w.split(":")[0] for w, _ in commands}
    assert {"README.md", "docs/robustness.md", "docs/streaming.md", "docs/timestamps.md", "docs/usage.md"} <= where
    assert len(commands) >= 80, len(commands)
    # variables of a block and continuation lines are followed
    robust = [argv for w, argv in commands if w.startswith("docs/robustness.md") and argv[:1] == ["run"]]
    assert robust and all("--model" in argv for argv in robust)


def test_every_documented_command_parses_and_names_real_adapters_and_options(capsys):
    from whisperbench.cli import build_parser

    parser = build_parser()
    problems = []
    for where, argv in documented_commands():
        try:
            args = parser.parse_args(argv)
        except SystemExit:
            problems.append(f"{where}: {capsys.readouterr().err.strip().splitlines()[-1]}")
            continue
        problem = _option_problem(argv, args)
        if problem:
            problems.append(f"{where}: {problem}")
    assert not problems, "\n".join(problems)


def test_a_drifted_command_is_caught(capsys):
    """The check above can fail: a renamed flag, an unknown adapter, an option no adapter has."""
    from whisperbench.cli import build_parser

    parser = build_parser()
    with pytest.raises(SystemExit):
        parser.parse_args(["gate", "--reference", "a", "--candidate", "b", "--min-qio", "95"])
    capsys.readouterr()
    args = parser.parse_args(["run", "--adapter", "faster-whisper", "--model", "m", "--dataset", "d"])
    assert _option_problem([], args) == ""
    args.option = ["compute_typ=int8"]
    assert "has no option(s) compute_typ" in _option_problem([], args)
    args.option = ["beam_size=five"]
    assert "beam_size" in _option_problem([], args)
    args.option, args.adapter = [], "faster-whisperr"
    assert _option_problem([], args) == "no adapter faster-whisperr"
    sweep = parser.parse_args(["sweep", "--model", "m", "--dataset", "d", "--variants", "whisper-cpp-q5_O"])
    assert "no variant named whisper-cpp-q5_O" in _option_problem([], sweep)


def test_the_command_line_reference_equals_the_parser():
    from whisperbench.devtools import clidoc

    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert page == clidoc.render(), "docs/cli.md is stale: python -m whisperbench.devtools.clidoc --write"
    assert "| `--max-latency-p90 S` |" in page and "## whisperbench demo" in page


def _block_after(heading: str, lang: str) -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index(heading) :]
    start = section.index(f"```{lang}\n") + len(f"```{lang}\n")
    return section[start : section.index("```", start)]


def _cli(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ, COLUMNS="120", NO_COLOR="1")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    assert shutil.which("whisperbench", path=env["PATH"]), "the whisperbench command is not installed"
    return env


def _tour_files(tmp_path: Path) -> None:
    """The files the tour names, made from two bundled clips: my-qa/manifest.jsonl, a hypotheses file
    recorded 'on the phone', and qa.tsv with its own column names."""
    from whisperbench.datasets import load_dataset

    examples = load_dataset("tiny-shortform").dataset.examples[:2]
    (tmp_path / "my-qa").mkdir()
    rows = [{"id": e.id, "audio": str(e.audio), "text": e.text} for e in examples]
    (tmp_path / "my-qa" / "manifest.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    hyps = [{"id": e.id, "hypothesis": e.text.lower()} for e in examples]
    (tmp_path / "from-the-phone.jsonl").write_text("".join(json.dumps(h) + "\n" for h in hyps))
    tsv = "wav\twords\n" + "".join(f"{e.audio}\t{e.text}\n" for e in examples)
    (tmp_path / "qa.tsv").write_text(tsv)


@pytest.mark.slow
def test_the_readme_tour_runs_as_written(tmp_path):
    """Each line of the README's ten-line tour, run as written in a fresh process: what it says it does."""
    _tour_files(tmp_path)
    env = _cli(tmp_path)
    lines = [line for line in _logical_lines(_block_after("## A ten-line tour", "bash"), False) if line.strip()]
    commands = [line for line in lines if not line.lstrip().startswith("#")]
    assert len(commands) == 10, commands
    codes = {}
    for line in commands:
        done = subprocess.run(
            line, shell=True, cwd=tmp_path, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True
        )
        codes[line.split("#")[0].strip()] = (done.returncode, done.stdout + done.stderr)
    for line, (code, output) in codes.items():
        if line.startswith("whisperbench gate"):
            assert code in (0, 1), output  # "exit 0 pass, 1 regression, 2 cannot judge"
        elif line.startswith("whisperbench runs remove"):
            assert code == 2 and "--yes" in output, output  # "asks first": with no terminal to ask, says --yes
        else:
            assert code == 0, f"{line}\n{output}"
    assert "QoI" in codes["whisperbench compare --reference reference --candidate candidate --examples 5"][1]
    assert (tmp_path / "gate.xml").read_text().startswith("<?xml")
    assert "<html" in (tmp_path / "leaderboard.html").read_text()[:500].lower()
    header = (tmp_path / "rows.csv").read_text().splitlines()[0]
    assert "id" in header.split(",") and (tmp_path / "runs" / "device" / "summary.json").exists()
    listing = codes["whisperbench runs"][1]
    assert all(name in listing for name in ("reference", "candidate", "device"))
    assert (tmp_path / "runs" / "candidate").exists()  # not removed without --yes


@pytest.mark.slow
def test_the_readme_own_model_session_prints_what_the_readme_shows(tmp_path):
    """The console session of "Your own model", run as written: the q5_0 file's sha256 and size line, and the
    comparison's figures, equal the README's."""
    env = _cli(tmp_path)
    block = _block_after("## Your own model", "console")
    printed: dict[str, list[str]] = {}
    command = None
    for raw in block.splitlines():
        if raw.startswith("$ "):
            command = raw[2:].split("  #")[0].strip()
            printed[command] = []
        elif command:
            printed[command].append(raw)
    for command, shown in printed.items():
        done = subprocess.run(
            command, shell=True, cwd=tmp_path, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True
        )
        assert done.returncode == 0, f"{command}\n{done.stdout}{done.stderr}"
        out = [_cells(o) for o in done.stdout.splitlines()]
        for line in shown:
            if line.startswith("(rows abridged") or set(line) <= set("|:- "):
                continue  # the note under an abridged table, a table's rule (its width follows its cells)
            assert _cells(line) in out, f"{command}: README shows {line!r}; printed:\n{done.stdout}"


def _cells(line: str) -> tuple[str, ...]:
    """A printed line as its words, a table row as its cells (the README may show a table's columns narrower)."""
    if line.startswith("|"):
        return tuple(cell.strip() for cell in line.strip().strip("|").split("|"))
    return (line.rstrip(),)


def test_every_run_the_readme_uses_is_created_once_in_the_readme():
    """Issue 70 items 5 and 6: the tour and "Your own model" both created ``--name reference`` (in one folder the
    second was refused: "exists with a different dataset_source"), and the streaming gate used a run ``batch`` the
    README never creates. Each ``--name`` of a ``run``/``score`` is created by one command, and each run a command
    names (``--reference``, ``--candidate``, ``--repeat``) is one of them."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    created: dict[str, set[str]] = {}
    used: list[tuple[str, str]] = []
    for lang, body in FENCE.findall(readme):
        if lang not in SHELL_BLOCKS:
            continue
        for line in _logical_lines(body, console=lang == "console"):
            if not line.startswith("whisperbench "):
                continue
            words = shlex.split(line, comments=True)
            if words[1] in ("run", "score") and "--name" in words:
                created.setdefault(words[words.index("--name") + 1], set()).add(" ".join(words))
            used += [(words[i + 1], line) for i, w in enumerate(words[:-1]) if w in ("--reference", "--candidate")]
    assert {name: lines for name, lines in created.items() if len(lines) > 1} == {}
    assert [(name, line) for name, line in used if name not in created] == []


def test_the_readme_install_lines_install_what_its_streaming_lines_run():
    """Issue 70 item 6: ``run --adapter whisperlivekit`` needed docs/streaming.md's extra ``pip install --no-deps``
    step, which the README's install lines left out. Each README install line installs the streaming packages as
    .ci/run does (the same pins), so the README's streaming lines run after its own install."""
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    pins = re.search(r"pip install -q --no-deps ([^\n]+)", ci)
    assert pins, ".ci/run installs the streaming packages with --no-deps"
    wanted = f"pip install --no-deps {pins.group(1).strip()}"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    installs = [line for _, body in FENCE.findall(readme) for line in _logical_lines(body, False) if "-m venv" in line]
    assert len(installs) == 2 and all(wanted in line for line in installs), (wanted, installs)
    assert "whisperlivekit" in readme[readme.index("## Streaming") :].split("```")[1]  # a streaming line to run
