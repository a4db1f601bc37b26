"""The Ray backend on a local Ray cluster started here: same results as in-process, a killed worker's
examples retried elsewhere, crashing examples bounded and recorded, resume across backends, the CLI
joining the cluster by address."""

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from whisperbench.adapters import DecodingOptions, register
from whisperbench.adapters.base import Adapter
from whisperbench.errors import OptionError, WhisperbenchError
from whisperbench.harness import RunRequest, open_run, run_evaluation
from whisperbench.harness.retry import DEFAULT_ATTEMPTS
from whisperbench.harness.runner import backend_of
from whisperbench.scoring import qoi, summarize
from whisperbench.types import Transcript

from .conftest import REPO, write_jsonl

_SOURCE = str(Path(__import__("whisperbench").__file__).resolve().parents[1])  # this checkout's package
ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install 'whisperbench[ray]'")


@register
class CrashingEchoAdapter(Adapter):
    """Fault injection only: echoes the transcript; its process dies (``os._exit``) on ids in ``crash``
    every time, on ids in ``crash_once`` the first time (a marker file in ``marks`` remembers)."""

    name = "test-ray-crash"
    options = {"crash": "", "crash_once": "", "marks": "", "fail_load": "no"}
    uses_weights = False

    def load(self):
        if self.settings["fail_load"] == "yes":
            raise RuntimeError("injected load failure")

    def transcribe(self, audio, example, *, long_form):
        if example.id in self.settings["crash"].split("+"):
            os._exit(3)
        if example.id in self.settings["crash_once"].split("+"):
            mark = Path(self.settings["marks"]) / example.id
            if not mark.exists():
                mark.touch()
                os._exit(3)
        return Transcript(text=example.text)


@register
class OtherWeightsAdapter(Adapter):
    """Fault injection only: echoes the transcript; the first worker to load says it holds weights ``good``
    (fingerprint), every later one ``other`` (and loads 2 s later, so the first is live first); each example
    takes 0.7 s."""

    name = "test-ray-weights"
    options = {"marks": ""}
    uses_weights = False

    def load(self):
        mark = Path(self.settings["marks"]) / "first"
        try:
            mark.touch(exist_ok=False)
            self.fingerprint = "good"
        except FileExistsError:
            self.fingerprint = "other"
            time.sleep(2)

    def describe(self):
        return {**super().describe(), "weights": {"fingerprint": self.fingerprint}}

    def transcribe(self, audio, example, *, long_form):
        time.sleep(0.7)  # the run outlasts the other workers' loading
        return Transcript(text=example.text)


@register
class EnvEchoAdapter(Adapter):
    """Echoes the transcript when its worker has ``var`` set to a value whose sha256 is ``sha`` (and ``var2`` to
    ``sha2``), else says ``missing``: the values themselves never reach a transcript."""

    name = "test-ray-env"
    options = {"var": "", "sha": "", "var2": "", "sha2": ""}
    uses_weights = False

    def load(self):
        pass

    def transcribe(self, audio, example, *, long_form):
        import hashlib

        ok = all(
            hashlib.sha256(os.environ.get(self.settings[v], "").encode()).hexdigest() == self.settings[h]
            for v, h in (("var", "sha"), ("var2", "sha2"))
        )
        return Transcript(text=example.text if ok else "missing")


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory):
    """A local Ray instance (2 CPUs); its workers import this module and share the weight cache."""
    cache = os.environ.get("WHISPERBENCH_TEST_CACHE") or str(tmp_path_factory.getbasetemp() / "cache")
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        logging_level="warning",
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join([str(REPO), _SOURCE]), "WHISPERBENCH_CACHE": cache}},
    )
    yield ray.get_runtime_context().gcs_address
    ray.shutdown()


def _same_results(a, b):
    left, right = {p.id: p for p in a.scored()}, {p.id: p for p in b.scored()}
    assert left.keys() == right.keys()
    for ex_id, pred in left.items():
        other = right[ex_id]
        assert (pred.status, pred.hypothesis, pred.transcript, pred.wer) == (
            other.status,
            other.hypothesis,
            other.transcript,
            other.wer,
        ), ex_id
        assert pred.scored().words == other.scored().words, ex_id


@pytest.mark.slow
def test_ray_equals_in_process_resumes_and_survives_a_killed_worker(ray_cluster, tmp_path, tiny_short):
    runs = str(tmp_path / "runs")
    decoding = DecodingOptions(threads=1, extra={"compute_type": "int8"})
    common = dict(runs_dir=runs, decoding=decoding)
    run_evaluation(RunRequest("faster-whisper", "tiny.en", str(tiny_short), name="local", **common))
    first = run_evaluation(
        RunRequest(
            "faster-whisper", "tiny.en", str(tiny_short), name="ray", limit=2, backend="ray", workers=2, **common
        )
    )
    assert first.computed == 2

    store = Path(runs) / "ray" / "predictions.jsonl"
    killed: list[int] = []

    def kill_first_worker(_count):  # right after this run's first prediction is stored
        if not killed:
            pid = json.loads(store.read_text().splitlines()[-1])["extra"]["worker"]["pid"]
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    result = run_evaluation(
        RunRequest("faster-whisper", "tiny.en", str(tiny_short), name="ray", backend="ray", workers=2, **common),
        progress=kill_first_worker,
    )
    assert (result.computed, result.resumed) == (4, 2)
    info = result.info
    assert info["backend"] == "ray" and info["workers"] == 2
    backend = info["backend_info"]
    assert killed and any(f"pid {killed[0]}" in death for death in backend["deaths"]), backend["deaths"]
    assert backend["retried_examples"], "the killed worker had an example in flight; it must have been retried"
    ray_run, local_run = open_run("ray", runs), open_run("local", runs)
    for pred in ray_run.predictions:
        if pred.id in backend["retried_examples"]:
            assert backend["retried_examples"][pred.id] == [{"host": pred.extra["worker"]["host"], "pid": killed[0]}]
            assert pred.extra["worker"]["pid"] != killed[0] and pred.extra["attempts"] == 2
    _same_results(ray_run, local_run)
    assert result.summary.num_failed == 0 and result.summary.wer == local_run.summary.wer
    # memory and load time come from the actors, not from this process
    assert info["peak_rss_mb"] and info["load_s"] > 0
    assert all(a["pid"] != os.getpid() for a in backend["actors"] if a["pid"])

    # stored counts (the fast scoring path) give what re-scoring these real outputs gives
    def unscored(run):
        return [dataclasses.replace(p, score=None) for p in run.predictions]

    for run in (ray_run, local_run):
        assert summarize(run.predictions, "english", "short") == summarize(unscored(run), "english", "short")
    assert qoi(local_run.predictions, ray_run.predictions, "english").to_json(True) == qoi(
        unscored(local_run), unscored(ray_run), "english"
    ).to_json(True)


def test_crashing_examples_are_retried_elsewhere_then_recorded_as_failed(ray_cluster, tmp_path, local_manifest, caplog):
    marks = tmp_path / "marks"
    marks.mkdir()
    decoding = DecodingOptions(extra={"crash": "jfk", "crash_once": "LJ001-0003", "marks": str(marks)})
    caplog.set_level("INFO", logger="whisperbench")
    result = run_evaluation(
        RunRequest(
            "test-ray-crash",
            "m",
            str(local_manifest()),
            runs_dir=str(tmp_path / "r"),
            name="crash",
            backend="ray",
            workers=2,
            warmup=False,
            decoding=decoding,
        )
    )
    preds = {p.id: p for p in open_run("crash", tmp_path / "r").predictions}
    assert len(preds) == 6 and result.summary.num_failed == 1
    poison = preds["jfk"]
    attempts = DEFAULT_ATTEMPTS  # the one retry policy, as in-process and in a process pool (tests/test_retry.py)
    assert poison.status == "error" and f"on each of its {attempts} attempts" in poison.error
    assert poison.error.startswith("example jfk")
    flaky = preds["LJ001-0003"]
    assert flaky.status == "ok" and flaky.hypothesis == flaky.transcript and flaky.extra["attempts"] == 2
    backend = result.info["backend_info"]
    assert len(backend["deaths"]) == attempts + 1 and len(backend["retried_examples"]["jfk"]) == attempts
    assert result.info["execution"]["retry"]["attempts"] == attempts == backend["max_attempts"]
    crashed_in = backend["retried_examples"]["LJ001-0003"]
    assert len(crashed_in) == 1 and flaky.extra["worker"]["pid"] != crashed_in[0]["pid"]  # retried elsewhere
    assert all(p.status == "ok" for i, p in preds.items() if i != "jfk")
    assert result.info["backend_info"]["failed_after_retries"] == ["jfk"]
    deaths = [r.getMessage() for r in caplog.records if "died" in r.getMessage()]
    assert len(deaths) == attempts + 1 and all(
        r.levelname == "WARNING" for r in caplog.records if "died" in r.getMessage()
    )
    assert all("nothing is lost" in d and "on node " in d for d in deaths)
    assert sum("retried on other workers: " in d and "jfk" in d for d in deaths) == attempts - 1
    assert any(f"stored as failed after {attempts} attempts: jfk" in d for d in deaths), deaths


def test_a_run_started_in_process_resumes_on_ray(ray_cluster, tmp_path, local_manifest):
    manifest = str(local_manifest())
    common = dict(runs_dir=str(tmp_path / "r"), name="mixed", warmup=False)
    first = run_evaluation(RunRequest("test-ray-crash", "m", manifest, limit=3, **common))
    assert first.info["backend"] == "in-process"
    second = run_evaluation(RunRequest("test-ray-crash", "m", manifest, backend="ray", workers=2, **common))
    assert (second.computed, second.resumed) == (3, 3) and second.info["backend"] == "ray"
    preds = open_run("mixed", tmp_path / "r").predictions
    assert len(preds) == 6 and all(p.status == "ok" and p.hypothesis == p.transcript for p in preds)
    assert sum("worker" in p.extra for p in preds) == 3  # only the examples computed on Ray


def test_clear_errors(ray_cluster, tmp_path, local_manifest):
    manifest = str(local_manifest())
    with pytest.raises(WhisperbenchError, match="3 workers need 3 CPUs"):
        run_evaluation(
            RunRequest(
                "test-ray-crash", "m", manifest, runs_dir=str(tmp_path / "r"), backend="ray", workers=3, warmup=False
            )
        )
    with pytest.raises(WhisperbenchError, match="no worker could load adapter test-ray-crash: .*injected load failure"):
        run_evaluation(
            RunRequest(
                "test-ray-crash",
                "m",
                manifest,
                runs_dir=str(tmp_path / "r2"),
                backend="ray",
                warmup=False,
                decoding=DecodingOptions(extra={"fail_load": "yes"}),
            )
        )
    with pytest.raises(OptionError, match="--backend ray"):
        backend_of(RunRequest("x", "m", "d", address="127.0.0.1:6379"))
    with pytest.raises(OptionError, match="unknown backend"):
        backend_of(RunRequest("x", "m", "d", backend="dask"))
    assert backend_of(RunRequest("x", "m", "d", workers=2)) == "process-pool"


def test_cli_joins_a_cluster_by_address(ray_cluster, tmp_path, tiny_rows, tiny_short):
    hyp = write_jsonl(tmp_path / "hyp.jsonl", [{"id": r["id"], "hypothesis": r["text"].lower()} for r in tiny_rows[1:]])
    base = [
        sys.executable,
        "-m",
        "whisperbench",
        "run",
        "--adapter",
        "recorded",
        "--model",
        str(hyp),
        "--dataset",
        str(tiny_short),
        "--runs-dir",
        str(tmp_path / "runs"),
        "--json",
    ]
    local = subprocess.run(base + ["--name", "local"], capture_output=True, text=True, cwd=REPO)
    remote = subprocess.run(
        base + ["--name", "remote", "--backend", "ray", "--address", ray_cluster, "--workers", "2"],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert local.returncode == 0 and remote.returncode == 0, remote.stderr[-2000:]
    # speed facts, and whether the machine was busy (Ray does not measure that), are not what the backends share
    ignore = {
        "load_s",
        "warmup_s",
        "peak_rss_mb",
        "harness_overhead_pct",
        "wall_s",
        "rtfx_reliable",
        "rtfx_unreliable_why",
    }
    local_summary, remote_summary = json.loads(local.stdout), json.loads(remote.stdout)
    assert {k: v for k, v in remote_summary.items() if k not in ignore} == {
        k: v for k, v in local_summary.items() if k not in ignore
    }
    assert remote_summary["num_failed"] == 1  # the id left out of the hypotheses file
    info = json.loads((tmp_path / "runs" / "remote" / "run.json").read_text())
    assert info["backend"] == "ray" and info["backend_info"]["address"] == ray_cluster


def test_an_actor_holding_other_weights_is_refused(ray_cluster, tmp_path, local_manifest):
    """A worker whose weights fingerprint differs is refused (killed, said, recorded): every example is
    transcribed by the worker with the expected weights."""
    marks = tmp_path / "marks"
    marks.mkdir()
    decoding = DecodingOptions(threads=1, extra={"marks": str(marks)})
    result = run_evaluation(
        RunRequest(
            "test-ray-weights",
            "m",
            str(local_manifest()),
            runs_dir=str(tmp_path / "r"),
            name="w",
            backend="ray",
            workers=2,
            warmup=False,
            decoding=decoding,
        )
    )
    backend = result.info["backend_info"]
    refused = [a for a in backend["actors"] if a["status"] == "refused"]
    assert refused and all("weights differ" in a["error"] for a in refused)
    assert any("refused" in d for d in backend["deaths"]) and backend["weights_fingerprint"] == "good"
    preds = open_run("w", tmp_path / "r").predictions
    live_pids = {a["pid"] for a in backend["actors"] if a["status"] == "closed"}
    assert len(preds) == 6 and all(p.status == "ok" and p.extra["worker"]["pid"] in live_pids for p in preds)


def test_a_relative_model_path_reaches_the_workers_absolute(ray_cluster, tmp_path, tiny_rows, tiny_short, monkeypatch):
    """``--model hyp.jsonl`` (relative to where the run starts) is what the workers load, whatever their folder."""
    write_jsonl(tmp_path / "hyp.jsonl", [{"id": r["id"], "hypothesis": r["text"]} for r in tiny_rows])
    monkeypatch.chdir(tmp_path)
    result = run_evaluation(
        RunRequest(
            "recorded",
            "hyp.jsonl",
            str(tiny_short),
            runs_dir=str(tmp_path / "r"),
            name="rel",
            backend="ray",
            workers=2,
            warmup=False,
            decoding=DecodingOptions(threads=1),
        )
    )
    assert result.summary.num_failed == 0 and result.summary.wer == 0.0
    assert result.info["backend_info"]["model"] == str(tmp_path / "hyp.jsonl")
    assert result.info["backend_info"]["actor_cpus"] == 1


def test_chosen_variables_reach_the_workers_and_their_values_no_file_or_log(
    ray_cluster, tmp_path, local_manifest, monkeypatch, caplog
):
    """--ray-env NAME forwards the driver's value, --runtime-env (a YAML file) sets others; run.json names them,
    and neither value is anywhere in the run folder or the log."""
    import hashlib
    import logging
    import uuid

    secret, other = f"sk-{uuid.uuid4().hex}", f"rt-{uuid.uuid4().hex}"
    monkeypatch.setenv("WB_TEST_SECRET", secret)
    (tmp_path / "env.yaml").write_text(f"env_vars:\n  WB_VIA_RUNTIME_ENV: {other}\n")
    sha = {"sha": hashlib.sha256(secret.encode()).hexdigest(), "sha2": hashlib.sha256(other.encode()).hexdigest()}
    decoding = DecodingOptions(threads=1, extra={"var": "WB_TEST_SECRET", "var2": "WB_VIA_RUNTIME_ENV", **sha})
    caplog.set_level(logging.INFO, logger="whisperbench")
    result = run_evaluation(
        RunRequest(
            "test-ray-env",
            "m",
            str(local_manifest()),
            runs_dir=str(tmp_path / "r"),
            name="env",
            backend="ray",
            workers=2,
            warmup=False,
            decoding=decoding,
            ray_env=("WB_TEST_SECRET",),
            runtime_env=str(tmp_path / "env.yaml"),
        )
    )
    assert result.summary.num_failed == 0 and result.summary.wer == 0.0  # every worker had both values
    backend, execution = result.info["backend_info"], result.info["execution"]
    assert backend["forwarded_env"] == execution["forwarded_env"] == ["WB_TEST_SECRET"]
    assert backend["runtime_env"] == execution["runtime_env"] == {"env_vars": ["WB_VIA_RUNTIME_ENV"]}
    assert backend["joined_address"] == ray_cluster and backend["node_count"] == 1
    assert backend["nodes"][0]["cpus"] == 2.0
    for path in (tmp_path / "r").rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert secret.encode() not in data and other.encode() not in data, path
    assert secret not in caplog.text and other not in caplog.text
    assert "worker 0 live on node" in caplog.text or "worker 1 live on node" in caplog.text
    monkeypatch.delenv("WB_TEST_SECRET")
    with pytest.raises(OptionError, match="not set in this environment: WB_TEST_SECRET"):
        run_evaluation(
            RunRequest(
                "test-ray-env",
                "m",
                str(local_manifest()),
                runs_dir=str(tmp_path / "r"),
                name="env2",
                backend="ray",
                ray_env=("WB_TEST_SECRET",),
            )
        )


def test_waiting_for_cpus_is_said(ray_cluster, tmp_path, local_manifest, monkeypatch, caplog):
    """With one of the two CPUs held by another job, the second worker waits: the console says for how many CPUs
    and how many the cluster has free; the run finishes on the first worker."""
    import logging

    from whisperbench.harness import ray_backend

    @ray.remote(num_cpus=1)
    class Holder:
        def ping(self):
            return 1

    holder = Holder.remote()
    ray.get(holder.ping.remote())
    monkeypatch.setattr(ray_backend, "SAY_WAITING_S", 0.2)
    marks = tmp_path / "marks"
    marks.mkdir()
    caplog.set_level(logging.INFO, logger="whisperbench")
    try:
        result = run_evaluation(
            RunRequest(
                "test-ray-weights",
                "m",
                str(local_manifest()),
                warmup=False,
                runs_dir=str(tmp_path / "r"),
                name="wait",
                backend="ray",
                workers=2,
                decoding=DecodingOptions(threads=1, extra={"marks": str(marks)}),
            )
        )
    finally:
        ray.kill(holder)
    assert result.summary.num_failed == 0
    assert "backend ray: waiting for 1 CPUs (1 worker(s) of 1 CPUs not started" in caplog.text
    assert "the cluster has 0 of 2 CPUs free" in caplog.text


@pytest.mark.slow
def test_more_workers_than_cpus_on_a_local_ray_start_one_actor_per_cpu(tmp_path):
    """docs/usage.md's ``--backend ray --workers 8`` failed on 2 CPUs ("8 workers need 8 CPUs"). On a Ray started
    for the run, as many actors start as there are CPUs, with a warning, and run.json says both counts (a fresh
    process: no Ray is running in it)."""
    recorded = Path(_SOURCE).parent / "datasets" / "tiny" / "recorded" / "openai-whisper-base.jsonl"
    workers = 4 * (os.cpu_count() or 1)
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [_SOURCE, env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-m", "whisperbench", "run", "--adapter", "recorded", "--model", str(recorded)]
        + ["--dataset", "tiny-shortform", "--backend", "ray", "--workers", str(workers), "--name", "many"]
        + ["--runs-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"{workers} workers asked for" in done.stderr
    info = json.loads((tmp_path / "many" / "run.json").read_text())["backend_info"]
    assert info["actors_requested"] == workers and 1 <= info["actors_started"] < workers
