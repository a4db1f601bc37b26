"""The code's shape, checked: no import cycles, no upward imports, reports without the runner, adapter
options declared once with types and help, and the CLI's choices taken from the code's own constants."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from whisperbench.cli import build_parser, main


def test_no_import_cycles_and_no_upward_imports():
    from whisperbench.devtools.imports import cycles, import_graph, layer_violations

    graph = import_graph()
    assert len(graph) > 60  # the whole package was read
    assert cycles(graph) == []
    assert layer_violations(graph) == []


def test_no_function_is_over_80_lines():
    from whisperbench.devtools.imports import long_functions

    assert long_functions() == []
    assert long_functions(limit=40), "the checker reads every function (some are over 40 lines)"


def test_no_class_is_over_the_limit_and_every_public_function_is_documented():
    from whisperbench.devtools.imports import MAX_CLASS_LINES, long_classes, undocumented

    assert long_classes() == []
    assert long_classes(limit=MAX_CLASS_LINES // 2), "the checker reads every class (some are over half the limit)"
    assert undocumented() == []


def test_the_docstring_checker_finds_a_missing_docstring(tmp_path, monkeypatch):
    import sys

    from whisperbench.devtools import imports

    package = tmp_path / "whisperbench_probe"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "mod.py").write_text(
        'class Base:\n    def run(self):\n        """Documented once."""\n\n\n'
        "class Child(Base):\n    def run(self):\n        return 1\n\n    def fresh(self):\n        return 2\n\n\n"
        "def helper():\n    return 3\n\n\ndef _private():\n    return 4\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(imports, "_modules", lambda: {"whisperbench_probe.mod": package / "mod.py"})
    try:
        found = imports.undocumented()
    finally:
        sys.modules.pop("whisperbench_probe.mod", None)
        sys.modules.pop("whisperbench_probe", None)
    assert found == [
        "whisperbench_probe.mod.Base",
        "whisperbench_probe.mod.Child",
        "whisperbench_probe.mod.Child.fresh",
        "whisperbench_probe.mod.helper",
    ]


def test_the_checker_finds_a_cycle_and_an_upward_import():
    from whisperbench.devtools.imports import cycles, layer_violations

    graph = {
        "whisperbench.models.a": {"whisperbench.models.b"},
        "whisperbench.models.b": {"whisperbench.models.a"},
        "whisperbench.scoring.x": {"whisperbench.harness.runner"},
        "whisperbench.harness.runner": set(),
    }
    assert cycles(graph) == [["whisperbench.models.a", "whisperbench.models.b"]]
    assert layer_violations(graph) == ["whisperbench.scoring.x -> whisperbench.harness.runner"]


def test_reports_import_without_the_harness():
    code = (
        "import sys, whisperbench.reports, whisperbench.reports.html, whisperbench.reports.export; "
        "print([m for m in sys.modules if m.startswith(('whisperbench.harness', 'whisperbench.adapters', "
        "'whisperbench.datasets'))])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_every_builtin_adapter_option_is_typed_and_documented():
    from whisperbench.adapters import registry
    from whisperbench.adapters.options import Option

    for name, cls in registry().items():
        if not cls.__module__.startswith("whisperbench."):
            continue  # adapters that other tests register
        for key, option in cls.options.items():
            assert isinstance(option, Option), (name, key)
            assert option.help, (name, key)


@pytest.mark.parametrize(
    "option,message",
    [
        ("concurrency=four", "option concurrency='four' is not an integer"),
        ("cache=maybe", "option cache='maybe' is not a boolean"),
        ("response_format=xml", "option response_format='xml' is not one of json, verbose_json, text"),
    ],
)
def test_a_bad_adapter_option_is_one_line_and_exit_2(option, message, tiny_short, tmp_path, capsys):
    # before: "-o concurrency=four" reached int() inside the adapter and printed a traceback
    code = main(
        [
            "run",
            "--adapter",
            "openai-api",
            "--model",
            "whisper-1",
            "--dataset",
            str(tiny_short),
            "--runs-dir",
            str(tmp_path),
            "-o",
            option,
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and message in err and "Traceback" not in err
    assert [line for line in err.splitlines() if line.startswith("error:")] == [err.splitlines()[-1]]


def test_adapters_name_lists_typed_options(capsys):
    assert main(["adapters", "openai-api", "--json"]) == 0
    rows = {row["option"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows["concurrency"]["type"] == "integer" and rows["concurrency"]["default"] == 4
    assert rows["cache"]["type"] == "boolean" and rows["response_format"]["choices"] == ["json", "verbose_json", "text"]
    assert main(["adapters", "whisper-cpp"]) == 0
    assert "quantization" in capsys.readouterr().out


def test_cli_choices_come_from_the_code():
    from whisperbench.harness.choices import BACKENDS
    from whisperbench.harness.longform import STRATEGIES
    from whisperbench.scoring.normalize import normalizer_names

    run = build_parser()._subparsers._group_actions[0].choices["run"]
    choices = {action.dest: tuple(action.choices) for action in run._actions if action.choices}
    assert choices["backend"] == tuple(BACKENDS.names()) and choices["long_form"] == tuple(STRATEGIES)
    assert (
        choices["normalizer"]
        == tuple(normalizer_names())
        == ("english", "basic", "none", "basic+zh-hans", "none+zh-hans")
    )


def test_execution_settings_are_said_on_resume_never_refused(tmp_path, tiny_rows, tiny_short, capsys):
    """Threads, workers, backend, isolation, timeout, warm-up and refresh are how a run executes, not what it is:
    another value resumes the run and the console says what changed."""
    from .conftest import write_jsonl

    hyp = write_jsonl(tmp_path / "hyp.jsonl", [{"id": r["id"], "hypothesis": r["text"]} for r in tiny_rows])
    base = [
        "run",
        "--adapter",
        "recorded",
        "--model",
        str(hyp),
        "--dataset",
        str(tiny_short),
        "--runs-dir",
        str(tmp_path),
        "--name",
        "r",
        "--limit",
        "3",
    ]
    assert main(base + ["-o", "threads=1"]) == 0
    capsys.readouterr()
    assert main(base[:-2] + ["-o", "threads=2", "--no-warmup"]) == 0  # the rest of the dataset, resumed
    out = capsys.readouterr().out
    assert "(3 computed, 3 resumed)" in out
    assert "resumed with threads 2 (the stored run had 1)" in out and "warmup False (the stored run had True)" in out


def test_run_json_round_trips_through_the_typed_record(tmp_path, tiny_rows, tiny_short):
    """run.json is read as a RunInfo and written back without losing or changing a field, unknown ones included."""
    from whisperbench.store.run_info import RunInfo
    from whisperbench.store.runs import open_run

    from .conftest import write_jsonl

    hyp = write_jsonl(tmp_path / "hyp.jsonl", [{"id": r["id"], "hypothesis": r["text"]} for r in tiny_rows])
    assert (
        main(
            [
                "run",
                "--adapter",
                "recorded",
                "--model",
                str(hyp),
                "--dataset",
                str(tiny_short),
                "--runs-dir",
                str(tmp_path),
                "--name",
                "r",
            ]
        )
        == 0
    )
    stored = json.loads((tmp_path / "r" / "run.json").read_text())
    assert RunInfo.from_dict(stored).to_dict() == stored
    assert RunInfo.from_dict(stored | {"added_later": [1]}).to_dict()["added_later"] == [1]
    run = open_run("r", tmp_path)
    assert (run.meta.adapter, run.meta.status, run.meta.dataset.num_examples) == (
        "recorded",
        "finished",
        len(tiny_rows),
    )
    assert run.meta.identity()["decoding"] == {k: v for k, v in stored["decoding"].items() if k != "threads"}


def test_a_record_needs_a_docstring_of_its_own():
    """The signature ``dataclasses`` writes for an undocumented class, or a docstring inherited from a base class,
    does not count: every public record says what it holds."""
    import dataclasses

    from whisperbench.devtools.imports import _own_doc

    @dataclasses.dataclass
    class Bare:
        x: int

    @dataclasses.dataclass
    class Said:
        """What it holds."""

        x: int

    class Inherits(Said):
        pass

    assert not _own_doc(Bare) and _own_doc(Said) and not _own_doc(Inherits)


def test_the_heavy_list_names_tests_that_exist():
    """tests/heavy.json (the quick loop leaves these out) names real test files, by pytest's node ids."""
    from tests.heavy import listed, node_id

    assert node_id("tests.test_cli", "test_x[a-b]") == "tests/test_cli.py::test_x[a-b]"
    heavy = listed()
    root = Path(__file__).resolve().parent.parent
    assert heavy and all((root / node.split("::")[0]).exists() for node in heavy)
