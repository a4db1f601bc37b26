"""One registry pattern (``whisperbench.core.registry.Registry``) serves every kind of plug-in: an installed package
adds a command, an experiment tracker, a report document, an adapter and a model format through entry points,
and each shows where the built-in ones do, with no file of the project changed. The package is written here and
installed as a separate distribution (a ``.dist-info`` with ``entry_points.txt`` on the path)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

from .conftest import BUNDLED, python_probe

PLUGIN = '''
import json, os
from whisperbench.adapters.recorded import RecordedAdapter
from whisperbench.models.formats import Format
from whisperbench.reports.document import Document
from whisperbench.reports.trackers import Tracker

NAME = "hello"

def register(sub):
    p = sub.add_parser("hello", help="say hello from a plug-in")
    p.add_argument("who")
    p.set_defaults(func=command)

def command(args):
    print(f"hello {args.who}")
    return 0

def publish(tracked, experiment=None):
    path = os.environ["TEAM_TRACKER_OUT"]
    with open(path, "w") as f:
        json.dump({"experiment": experiment, "name": tracked.name, "metrics": tracked.metrics}, f)
    return f"wrote {tracked.name} to {path}"

def plain(frame, runs, references, out, title):
    return "".join(f"{r.name} {r.summary.wer:.4f}\\n" for r in runs)

TRACKER = Tracker("jsonfile", "a JSON file", "team_plugins:publish", ("experiment",))
DOCUMENT = Document("txt", ".txt", "run names and WERs as plain text", plain)

class TeamRecorded(RecordedAdapter):
    """The recorded adapter under a team's name."""
    name = "team-recorded"

FORMAT = Format(name="team-format", title="team", description="a team's own format", rank=99)
'''

ENTRY_POINTS = """[whisperbench.commands]
hello = team_plugins
[whisperbench.trackers]
jsonfile = team_plugins:TRACKER
[whisperbench.documents]
txt = team_plugins:DOCUMENT
[whisperbench.adapters]
team = team_plugins:TeamRecorded
[whisperbench.formats]
team = team_plugins:FORMAT
[whisperbench.metrics]
notametric = team_plugins:TRACKER
"""


@pytest.fixture
def site(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    dist = site / "team_plugins-1.0.dist-info"
    dist.mkdir(parents=True)
    (site / "team_plugins.py").write_text(PLUGIN, encoding="utf-8")
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: team-plugins\nVersion: 1.0\n", encoding="utf-8")
    (dist / "entry_points.txt").write_text(ENTRY_POINTS, encoding="utf-8")
    return site


def _cli(args: list[str], site: Path, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    environ = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]), **env)
    return subprocess.run(
        [sys.executable, "-m", "whisperbench", *args], cwd=cwd, env=environ, capture_output=True, text=True, timeout=300
    )


def test_an_installed_package_adds_a_command_tracker_document_adapter_and_format(site, tmp_path):
    hello = _cli(["hello", "team"], site, tmp_path)
    assert hello.returncode == 0 and hello.stdout == "hello team\n", hello.stderr
    assert "hello" in _cli(["--help"], site, tmp_path).stdout

    adapters = _cli(["adapters", "--json"], site, tmp_path)
    assert "team-recorded" in adapters.stdout, adapters.stderr
    formats = _cli(["models", "formats"], site, tmp_path)
    assert "team-format" in formats.stdout, formats.stderr

    runs = tmp_path / "runs"
    manifest = BUNDLED / "shortform" / "manifest.jsonl"
    recorded = BUNDLED / "recorded" / "openai-whisper-base.jsonl"
    scored = _cli(
        ["score", "--hypotheses", str(recorded), "--dataset", str(manifest), "--runs-dir", str(runs), "--name", "b"],
        site,
        tmp_path,
    )
    assert scored.returncode == 0, scored.stderr
    summary = json.loads((runs / "b" / "summary.json").read_text(encoding="utf-8"))

    out = tmp_path / "tracked.json"
    export = _cli(
        ["export", "b", "--to", "jsonfile", "--experiment", "qa", "--runs-dir", str(runs)],
        site,
        tmp_path,
        TEAM_TRACKER_OUT=str(out),
    )
    assert export.returncode == 0, export.stderr
    tracked = json.loads(out.read_text(encoding="utf-8"))
    assert tracked["experiment"] == "qa" and tracked["name"] == "b"
    assert tracked["metrics"]["wer"] == pytest.approx(summary["wer"])

    board = tmp_path / "board.txt"
    report = _cli(["report", "--runs-dir", str(runs), "--out", str(board), "--quiet"], site, tmp_path)
    assert report.returncode == 0, report.stderr
    assert board.read_text(encoding="utf-8") == f"b {summary['wer']:.4f}\n"


def test_an_entry_point_of_the_wrong_kind_is_left_out_with_a_warning(site, tmp_path):
    """The tracker record declared as a metric: left out, named, and the command still works."""
    recorded = BUNDLED / "recorded" / "openai-whisper-base.jsonl"
    manifest = BUNDLED / "shortform" / "manifest.jsonl"
    scored = _cli(
        ["score", "--hypotheses", str(recorded), "--dataset", str(manifest), "--runs-dir", "r"], site, tmp_path
    )
    assert scored.returncode == 0, scored.stderr
    assert "metric entry point notametric = team_plugins:TRACKER is a Tracker, not a whisperbench metric" in (
        scored.stderr
    )


def test_a_name_taken_at_run_time_is_refused_and_a_new_one_added_and_removed():
    from whisperbench.errors import ModelError
    from whisperbench.models.formats import FORMATS, Format

    with pytest.raises(ModelError, match="format 'ggml' is built in or installed"):
        FORMATS.add(Format(name="ggml", title="x", description="x", rank=1))
    FORMATS.add(Format(name="mine", title="x", description="x", rank=1))
    try:
        assert FORMATS.names()[0] == "mine" and FORMATS.get("mine").rank == 1  # ordered by rank
    finally:
        FORMATS.remove("mine")
    assert "mine" not in FORMATS
    with pytest.raises(ModelError, match=r"unknown format 'mine' \(formats: ctranslate2, "):
        FORMATS.get("mine")


def test_a_metric_in_this_repository_is_one_file(tmp_path, monkeypatch):
    """A module defining ``METRIC`` beside the built-in metric modules is found with nothing else changed: the
    file is put in a folder that ``whisperbench.scoring``'s package path includes (as a new file of
    src/whisperbench/scoring/ would be), and a scored run's summary.json holds its value."""
    import whisperbench.scoring as scoring
    from whisperbench import score
    from whisperbench.scoring.metrics import METRICS

    folder = tmp_path / "more_scoring"
    folder.mkdir()
    (folder / "qcount.py").write_text(
        "from whisperbench.scoring.metrics import Metric\n"
        "METRIC = Metric('qcount', 'letters e', per_example=lambda e: {'q': float(e.hypothesis.count('e'))},"
        " aggregate='sum')\n",
        encoding="utf-8",
    )
    monkeypatch.setattr(scoring, "__path__", [*scoring.__path__, str(folder)])
    METRICS.reload()
    try:
        assert "qcount" in METRICS.names()
        recorded = BUNDLED / "recorded" / "openai-whisper-base.jsonl"
        run = score(recorded, BUNDLED / "shortform" / "manifest.jsonl", runs_dir=tmp_path / "runs", name="q")
        expected = sum(json.loads(line)["hypothesis"].count("e") for line in recorded.read_text().splitlines())
        summary = json.loads((run.store.path / "summary.json").read_text(encoding="utf-8"))
        assert expected > 0 and (summary.get("metrics") or summary)["qcount"] == {"q": expected}
    finally:
        monkeypatch.undo()
        sys.modules.pop("whisperbench.scoring.qcount", None)
        METRICS.reload()


def test_an_adapter_found_by_its_module_s_name_imports_no_other_adapter_and_a_miss_still_finds_it():
    """`get_adapter("recorded")` imports the module named after it, not the other adapters' (what `score` does
    before its helper forks); a name its module is not called after ("ane-pytorch": ane_torch.py) is found by
    loading them all; an unknown name is refused naming the known ones."""
    probe = (
        "import sys\n"
        "from whisperbench.adapters import get_adapter, adapter_names\n"
        "print(get_adapter('recorded').__name__, get_adapter('whisper-cpp').__name__)\n"
        "print(sorted(m for m in sys.modules if m.startswith('whisperbench.adapters.')))\n"
        "print(get_adapter('ane-pytorch').__name__, 'openai-whisper' in adapter_names())\n"
    )
    out = python_probe(probe)
    assert out.returncode == 0, out.stderr
    found, modules, missed = out.stdout.splitlines()
    assert found == "RecordedAdapter WhisperCppAdapter"
    assert "whisperbench.adapters.openai_whisper" not in modules and "whisperbench.adapters.recorded" in modules
    assert missed == "AnePyTorchAdapter True"


@contextmanager
def _added(registry, item):
    registry.add(item)
    try:
        yield item
    finally:
        registry.remove(item.name)


def _choices(command: str, dest: str) -> list[str]:
    from whisperbench.cli import build_parser

    parser = build_parser()._subparsers._group_actions[0].choices[command]
    return list(next(a.choices for a in parser._actions if a.dest == dest))


def test_every_extension_point_is_a_registry_and_an_item_added_is_listed_and_used():
    """Backends, known models, normalizers, dataset sources, subtitle formats, noises and non-speech clips are
    registries like adapters and formats: an item added at run time is what the command line lists as a choice
    and what the code that reads the registry uses."""
    import numpy as np

    from whisperbench.core.registry import Registry
    from whisperbench.datasets import DATASET_SOURCES, DatasetSource, Opened, load_dataset
    from whisperbench.datasets.perturb import NOISES, NONSPEECH, NonSpeech, Recipe, _nonspeech
    from whisperbench.datasets.records import RawRecord
    from whisperbench.harness.choices import BACKENDS, BackendChoice
    from whisperbench.models.resolve import KNOWN_MODELS, KnownModel, list_models
    from whisperbench.reports.subtitles import SUBTITLE_FORMATS, SubtitleFormat
    from whisperbench.scoring.normalize import NORMALIZERS, Normalizer, get_normalizer

    for registry in (BACKENDS, KNOWN_MODELS, NORMALIZERS, DATASET_SOURCES, SUBTITLE_FORMATS, NOISES, NONSPEECH):
        assert isinstance(registry, Registry) and registry.names()

    with _added(NORMALIZERS, Normalizer("upper", "capitals", lambda: str.upper)):
        assert get_normalizer("upper")("ab c") == "AB C" and "upper" in _choices("run", "normalizer")
    get_normalizer.cache_clear()
    with _added(BACKENDS, BackendChoice("mine", "in this process", "whisperbench.harness.backends:InProcess")):
        assert "mine" in _choices("run", "backend")
    with _added(SUBTITLE_FORMATS, SubtitleFormat("txt", "plain", header="", separator=".", numbered=False)):
        assert "txt" in _choices("subtitles", "format")
        assert (
            SUBTITLE_FORMATS.get("txt").render([{"start": 0, "end": 1, "text": "hi"}])
            == "00:00:00.000 --> 00:00:01.000\nhi\n"
        )
    with _added(KNOWN_MODELS, KnownModel("mine", ("no-such-package",), ("no_such_module",), "a model", Path)):
        assert {"name": "mine", "description": "a model", "packages": "no-such-package", "installed": False} in (
            list_models()
        )

    audio = str(
        BUNDLED / "shortform" / "audio" / sorted(p.name for p in (BUNDLED / "shortform" / "audio").iterdir())[0]
    )
    inline = DatasetSource(
        "inline",
        "one example given in the spec",
        lambda spec: spec.startswith("inline:"),
        lambda spec, columns: Opened(
            [RawRecord({"id": "a", "audio": audio, "text": spec[7:]}, spec)], "one", spec, None
        ),
    )
    with _added(DATASET_SOURCES, inline):
        checked = load_dataset("inline:hello there")
    assert [(e.id, e.text) for e in checked.dataset] == [("a", "hello there")] and checked.dataset.name == "one"

    with _added(NONSPEECH, NonSpeech("ones", "a constant", lambda n, seed, name: np.ones(n, dtype=np.float32))):
        Recipe(nonspeech=("ones",))  # accepted
        assert _nonspeech("ones", 0.5, seed=0).sum() == 8000
    with pytest.raises(Exception, match="non-speech kinds silence, noise_low"):
        Recipe(nonspeech=("ones",))
    assert NOISES.names() == ["white", "pink", "brown", "babble"]
