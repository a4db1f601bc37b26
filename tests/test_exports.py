"""Results where teams look. `whisperbench export --to mlflow|wandb`: real MLflow stores and W&B offline files,
read back with their own readers (MLflow's client; W&B's protobuf records from its transaction log), checked
against jiwer and the runs. `whisperbench report --format hf`: a model card the Hub's own parser reads."""

import json
import sys
from pathlib import Path

import jiwer
import pandas as pd
import pytest

from whisperbench.cli import main
from whisperbench.reports.tracking import run_key
from whisperbench.store.runs import open_run

from .wandb_records import records

SECRET = "sk-SECRET0123456789"
MLFLOW_EXTRA = "MLflow is an optional extra: pip install 'whisperbench[mlflow]'"
WANDB_EXTRA = "W&B is an optional extra: pip install 'whisperbench[wandb]'"


@pytest.fixture
def runs(recorded_runs):
    """The recorded reference, good and bad runs (conftest)."""
    return recorded_runs


def _with_secret(runs_dir: Path, name: str) -> None:
    """A run.json holding an endpoint with a key in it (as a run stored by hand or an old version could)."""
    path = runs_dir / name / "run.json"
    info = json.loads(path.read_text())
    info["decoding"]["base_url"] = f"http://user:{SECRET}@127.0.0.1:9/v1?api_key={SECRET}"
    path.write_text(json.dumps(info))


def _expected(runs_dir: Path, name: str) -> dict:
    """WER straight from jiwer on the stored normalized texts, and the stored summary."""
    run = open_run(name, runs_dir)
    refs = [p.scored().transcript_norm for p in run.scored()]
    hyps = [p.scored().hypothesis_norm for p in run.scored()]
    return {"wer": 100 * jiwer.wer(refs, hyps), "summary": run.summary.to_dict(), "key": run_key(run)}


@pytest.mark.parametrize("store", ["file", "sqlite"])
def test_mlflow_export_reads_back_and_a_second_export_updates(runs, tmp_path, monkeypatch, capsys, store):
    MlflowClient = pytest.importorskip("mlflow", reason=MLFLOW_EXTRA).MlflowClient

    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3 keeps the file store behind this switch
    monkeypatch.chdir(tmp_path)  # a sqlite store keeps its artifacts in ./mlruns
    uri = f"file:{tmp_path / 'mlruns'}" if store == "file" else f"sqlite:///{tmp_path / 'mlflow.db'}"
    _with_secret(runs, "bad")
    args = ["export", "bad", "--reference", "ref", "--to", "mlflow", "--tracking-uri", uri, "--runs-dir", str(runs)]
    assert main(args) == 0
    assert "created run" in capsys.readouterr().out
    assert main(args) == 0
    assert "updated run" in capsys.readouterr().out
    assert main(["export", "ref", "--to", "mlflow", "--tracking-uri", uri, "--runs-dir", str(runs)]) == 0

    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("whisperbench")
    found = client.search_runs([experiment.experiment_id])
    assert sorted(r.info.run_name for r in found) == ["bad", "ref"]  # re-exporting did not add a run
    bad = next(r for r in found if r.info.run_name == "bad")
    expected = _expected(runs, "bad")
    assert bad.data.tags["whisperbench.key"] == expected["key"]
    assert bad.data.metrics["wer"] == pytest.approx(expected["wer"])
    assert bad.data.metrics["qoi"] == pytest.approx(100 / 6) and bad.data.metrics["qoi_regressed"] == 5
    assert bad.data.metrics["wer_ci_low"] <= bad.data.metrics["wer"] <= bad.data.metrics["wer_ci_high"]
    assert bad.data.metrics["num_examples"] == expected["summary"]["num_examples"] == 6
    assert bad.data.metrics["hallucination.catastrophic"] == expected["summary"]["hallucination"]["catastrophic"]
    assert bad.data.params["normalizer"] == "english" and bad.data.tags["whisperbench.reference"] == "ref"
    assert len(client.get_metric_history(bad.info.run_id, "wer")) == 2  # one value per export, one run

    names = {a.path for a in client.list_artifacts(bad.info.run_id)} | {
        a.path for folder in ("report", "run") for a in client.list_artifacts(bad.info.run_id, folder)
    }
    assert {
        "examples.csv",
        "examples.json",
        "report/leaderboard.md",
        "report/report.html",
        "run/run.json",
        "run/summary.json",
    } <= names
    local = Path(client.download_artifacts(bad.info.run_id, "examples.csv", str(tmp_path / "dl")))
    table = pd.read_csv(local)
    assert len(table) == 6 and table["regressed"].sum() == 5  # replaced on re-export, not appended
    assert SECRET not in json.dumps(bad.data.params | bad.data.tags)
    assert (
        SECRET not in Path(client.download_artifacts(bad.info.run_id, "run/run.json", str(tmp_path / "dl"))).read_text()
    )
    # a whole runs folder at once (e.g. a sweep): the two exported runs are updated, the third one added
    capsys.readouterr()
    assert (
        main(
            ["export", "--all", "--reference", "ref", "--to", "mlflow", "--tracking-uri", uri, "--runs-dir", str(runs)]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert out.count("updated run") == 2 and out.count("created run") == 1
    assert sorted(r.info.run_name for r in client.search_runs([experiment.experiment_id])) == ["bad", "good", "ref"]


def test_mlflow_export_with_a_reference_carries_every_pairing_as_compare_shows_it(runs, tmp_path, monkeypatch, capsys):
    """With ``--reference``, every declared pairing's figure reaches the real local MLflow file store as
    ``paired.METRIC.NAME`` (its interval as ``.ci_low`` / ``.ci_high``), equal to ``compare --json``'s ``paired``:
    the bad run's QoI 100/6 %, its WER increase, formatting drift, new loops…; the reference's own export has none."""
    MlflowClient = pytest.importorskip("mlflow", reason=MLFLOW_EXTRA).MlflowClient

    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    uri = f"file:{tmp_path / 'mlruns'}"
    common = ["--to", "mlflow", "--tracking-uri", uri, "--runs-dir", str(runs)]
    assert main(["export", "bad", "--reference", "ref", *common]) == 0
    assert main(["export", "ref", *common]) == 0
    capsys.readouterr()
    assert main(["compare", "--runs-dir", str(runs), "--reference", "ref", "--candidate", "bad", "--json"]) == 0
    paired = json.loads(capsys.readouterr().out)[0]["paired"]
    client = MlflowClient(tracking_uri=uri)
    found = client.search_runs([client.get_experiment_by_name("whisperbench").experiment_id])
    logged = {r.info.run_name: r.data.metrics for r in found}
    assert paired["wer.qoi"]["value"] == pytest.approx(100 / 6) and paired["wer.increase"]["value"] > 0
    shown = {key: figure for key, figure in paired.items() if figure["value"] is not None}
    assert {"wer.qoi", "wer.increase", "formatting.drift", "hallucination.new_loops"} <= set(shown)
    for key, figure in shown.items():
        assert logged["bad"][f"paired.{key}"] == pytest.approx(figure["value"]), key
        if figure["interval"]:
            low, high = figure["interval"]
            assert (logged["bad"][f"paired.{key}.ci_low"], logged["bad"][f"paired.{key}.ci_high"]) == pytest.approx(
                (low, high)
            ), key
    assert logged["bad"]["qoi_ci_low"] == logged["bad"]["paired.wer.qoi.ci_low"]
    assert not any(name.startswith("paired.") for name in logged["ref"])


@pytest.fixture
def wandb_offline(tmp_path, monkeypatch):
    """W&B in offline mode, every folder it writes inside the test's tmp_path."""
    pytest.importorskip("wandb", reason=WANDB_EXTRA)
    for name, folder in (
        ("WANDB_DIR", "wandb-runs"),
        ("WANDB_DATA_DIR", "wandb-data"),
        ("WANDB_CACHE_DIR", "wandb-cache"),
        ("WANDB_CONFIG_DIR", "wandb-config"),
    ):
        (tmp_path / folder).mkdir()
        monkeypatch.setenv(name, str(tmp_path / folder))
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    return tmp_path


def _record(path: Path, kind: str):
    return [getattr(r, kind) for r in records(path) if r.WhichOneof("record_type") == kind]


def test_wandb_offline_export_reads_back_one_run_id_and_one_artifact_version(runs, wandb_offline, capsys):
    _with_secret(runs, "bad")
    args = ["export", "bad", "--reference", "ref", "--to", "wandb", "--project", "qa", "--runs-dir", str(runs)]
    assert main(args) == 0 and main(args) == 0
    expected = _expected(runs, "bad")
    logs = sorted((wandb_offline / "wandb-runs").glob("wandb/offline-run-*/run-*.wandb"))
    assert len(logs) == 2 and all(p.name == f"run-{expected['key']}.wandb" for p in logs)  # `wandb sync` merges them

    digests = []
    for log in logs:
        (run,) = _record(log, "run")
        assert run.run_id == expected["key"] and run.project == "qa" and run.display_name == "bad"
        config = {u.key: json.loads(u.value_json) for c in _record(log, "config") for u in c.update}
        assert config["params"]["adapter"] == "recorded" and config["tags"]["whisperbench.reference"] == "ref"
        summary = {u.key: json.loads(u.value_json) for s in _record(log, "summary") for u in s.update if u.key}
        assert summary["wer"] == pytest.approx(expected["wer"]) and summary["qoi"] == pytest.approx(100 / 6)
        (artifact,) = _record(log, "artifact")
        files = {entry.path: Path(entry.local_path) for entry in artifact.manifest.contents}
        assert {"examples.table.json", "report/report.html", "report/leaderboard.md", "run/run.json"} <= set(files)
        table = json.loads(files["examples.table.json"].read_text())
        frame = pd.DataFrame(table["data"], columns=table["columns"])
        assert len(frame) == 6 and frame["regressed"].sum() == 5
        digests.append(artifact.digest)
        everything = log.read_bytes() + b"".join(p.read_bytes() for p in files.values())
        assert SECRET.encode() not in everything
    assert digests[0] == digests[1]  # unchanged results: the same artifact content, no new version


def test_a_file_export_takes_exactly_one_run(runs, tmp_path, capsys):
    assert main(["export", "ref", "bad", "--out", str(tmp_path / "x.csv"), "--runs-dir", str(runs)]) == 2
    assert "name exactly one" in capsys.readouterr().err and not (tmp_path / "x.csv").exists()


def test_a_missing_tracker_names_the_extra_to_install(runs, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "mlflow", None)  # as if MLflow were not installed
    assert main(["export", "bad", "--to", "mlflow", "--runs-dir", str(runs)]) == 2
    assert "pip install 'whisperbench[mlflow]'" in capsys.readouterr().err


def test_report_as_a_hugging_face_model_card_parsed_by_huggingface_hub(runs, tmp_path, capsys):
    from huggingface_hub import ModelCard

    out = tmp_path / "README.md"
    assert (
        main(
            [
                "report",
                "--runs-dir",
                str(runs),
                "--reference",
                "ref",
                "--format",
                "hf",
                "--out",
                str(out),
                "--title",
                "my-whisper",
                "--quiet",
            ]
        )
        == 0
    )
    card = ModelCard(out.read_text())
    results = {(r.metric_type, r.metric_name): r for r in card.data.eval_results}
    assert card.data.model_name == "my-whisper" and card.data.pipeline_tag == "automatic-speech-recognition"
    wers = {name: _expected(runs, name)["wer"] for name in ("ref", "good", "bad")}
    by_value = sorted(r.metric_value for (kind, _), r in results.items() if kind == "wer")
    assert by_value == sorted(round(v, 2) for v in wers.values())
    qois = sorted(r.metric_value for (kind, _), r in results.items() if kind == "qoi")  # none for the reference
    assert qois == [round(100 / 6, 1), 100.0]
    assert {r.dataset_name for r in results.values()} == {"tiny-shortform"}
    table = [line for line in card.text.splitlines() if line.startswith("| ") and "Model" not in line]
    assert len(table) == 3 and "(reference)" in table[0] and f"| {wers['ref']:.2f} |" in table[0]
    assert f"| {round(100 / 6, 1)} |" in table[2]  # the reference first, then by QoI


def test_wandb_online_without_a_key_says_what_to_set(runs, tmp_path):
    """No API key and no offline mode (a CI job missing its secret): one line naming both ways out, exit 2.
    In a fresh process: wandb keeps its settings (offline mode) per process once set up."""
    pytest.importorskip("wandb", reason=WANDB_EXTRA)
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")}
    env |= {"HOME": str(tmp_path), "WANDB_CONFIG_DIR": str(tmp_path / "wandb-config"), "WANDB_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "whisperbench", "export", "bad", "--to", "wandb", "--runs-dir", str(runs)],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "WANDB_API_KEY" in done.stderr and "WANDB_MODE=offline" in done.stderr and "Traceback" not in done.stderr


PASSWORD = "pw-SECRET4242"
_SOURCE = str(Path(__import__("whisperbench").__file__).resolve().parents[1])


def _export_in_a_fresh_process(runs: Path, tmp_path: Path, *args: str, env_add: dict | None = None):
    """``whisperbench export bad ARGS`` in a fresh process (a tracker keeps settings per process), the
    trackers' own network settings cleared so the harness' limits are the ones in force."""
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if not k.startswith(("WANDB_", "MLFLOW_"))}
    env |= {
        "HOME": str(tmp_path),
        "WANDB_CONFIG_DIR": str(tmp_path / "wandb-config"),
        "WANDB_DIR": str(tmp_path),
        "PYTHONPATH": _SOURCE,
    }  # this checkout's package, whatever the working folder
    env |= env_add or {}
    # a limit the old code broke (MLflow waited 256 s on a refused port, W&B 100 s): a hang fails the test
    return subprocess.run(
        [sys.executable, "-m", "whisperbench", "export", "bad", "--runs-dir", str(runs), *args],
        env=env,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _one_redacted_line(done) -> None:
    assert done.returncode == 2, done.stderr
    out = done.stdout + done.stderr
    assert PASSWORD not in out and "Traceback" not in out
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "127.0.0.1" in errors[0], done.stderr


def test_mlflow_to_a_refused_port_gives_up_quickly_without_the_password(runs, tmp_path):
    pytest.importorskip("mlflow", reason=MLFLOW_EXTRA)
    done = _export_in_a_fresh_process(
        runs, tmp_path, "--to", "mlflow", "--tracking-uri", f"http://user:{PASSWORD}@127.0.0.1:1/"
    )
    _one_redacted_line(done)


def test_a_tracker_server_that_never_answers_is_given_up_within_the_limit(runs, tmp_path):
    """A socket that takes connections and never replies: each request times out (5 s, 3 tries), where the
    trackers' own defaults wait minutes (MLflow 120 s a try, 8 tries; W&B 90 s for its init alone). MLflow and
    W&B wait side by side, each in its own fresh process: the test waits for the limit once, not twice."""
    import importlib.util
    import socket
    from concurrent.futures import ThreadPoolExecutor

    from whisperbench.reports.tracking import NETWORK

    trackers = [t for t in ("mlflow", "wandb") if importlib.util.find_spec(t) is not None]
    if not trackers:
        pytest.skip(f"{MLFLOW_EXTRA}; {WANDB_EXTRA}")
    assert NETWORK.worst_case_s() < 30
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)  # connections queue in the kernel; nothing ever reads or answers them
        url = f"http://user:{PASSWORD}@127.0.0.1:{silent.getsockname()[1]}"
        where = {
            "mlflow": (["--tracking-uri", url + "/"], {}),
            "wandb": ([], {"WANDB_API_KEY": "a" * 40, "WANDB_BASE_URL": url}),
        }

        def export(tracker: str):
            (tmp_path / tracker).mkdir()
            args, env_add = where[tracker]
            return _export_in_a_fresh_process(runs, tmp_path / tracker, "--to", tracker, *args, env_add=env_add)

        with ThreadPoolExecutor(len(trackers)) as pool:
            done = dict(zip(trackers, pool.map(export, trackers)))
    for tracker in trackers:
        _one_redacted_line(done[tracker])


def test_wandb_to_a_refused_port_gives_up_quickly_without_the_password(runs, tmp_path):
    pytest.importorskip("wandb", reason=WANDB_EXTRA)
    done = _export_in_a_fresh_process(
        runs,
        tmp_path,
        "--to",
        "wandb",
        env_add={"WANDB_API_KEY": "a" * 40, "WANDB_BASE_URL": f"http://user:{PASSWORD}@127.0.0.1:1"},
    )
    _one_redacted_line(done)


def test_a_tracker_package_missing_in_a_fresh_process_names_the_extra(runs, tmp_path):
    """As a user without the extra sees it: the package cannot be imported at all (no module cached)."""
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(
        "import sys\nclass _No:\n    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('mlflow', 'wandb'):\n            raise ModuleNotFoundError(name)\n"
        "sys.meta_path.insert(0, _No())\n"
    )
    import os

    path = os.pathsep.join([str(blocker), _SOURCE])
    for tracker in ("mlflow", "wandb"):
        done = _export_in_a_fresh_process(runs, tmp_path, "--to", tracker, env_add={"PYTHONPATH": path})
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert f"pip install 'whisperbench[{tracker}]'" in done.stderr
