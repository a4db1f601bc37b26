"""The scoring pool (``scoring.engine.map_ranges``): fresh interpreters (``spawn``), an explicit number of workers,
safe from a thread of a multi-threaded process, the same figures whatever the number of workers, and no worker
left behind when the command that started it is killed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from tests.conftest import BUNDLED, REPO
from whisperbench.scoring import engine as engine
from whisperbench.scoring.engine import map_ranges, score_prediction, score_predictions
from whisperbench.scoring.table import scored_table
from whisperbench.types import Prediction


def _predictions(count: int) -> list[Prediction]:
    """Pairs with every kind of edit, a failed example and a formatted output (the formatting metric's columns)."""
    words = "the quick brown fox jumps over a lazy dog near the river bank".split()
    preds = []
    for i in range(count):
        text = " ".join(words[i % 5 : i % 5 + 4 + i % 7])
        hyp = text.replace("o", "0", i % 2).replace(" a ", " ") + (" uh" if i % 3 == 0 else "")
        preds.append(Prediction(f"u{i:04d}", text.capitalize() + ".", hyp.upper() if i % 11 == 0 else hyp))
    preds[7] = Prediction(preds[7].id, preds[7].transcript, "", status="error", error="boom")
    return preds


def _pid(items: list, start: int, stop: int) -> tuple[int, int, str]:
    """The worker's pid and parent pid, and how it started (a pool part)."""
    import multiprocessing

    return os.getpid(), os.getppid(), multiprocessing.get_start_method()


def test_a_pool_started_from_a_thread_of_a_multithreaded_process_scores_correctly(monkeypatch):
    """The pool started from a short-lived thread while other threads run and one holds a lock: its workers are
    fresh interpreters (no fork of this process, whose held lock a fork would copy held), children of this
    process, and the table and scores are those of one process, to the bit."""
    preds = _predictions(300)
    one_scored, one_table = scored_table(preds, "english", workers=1)
    monkeypatch.setattr(engine, "PARALLEL_MIN", 10)
    held, stop = threading.Lock(), threading.Event()

    def busy() -> None:
        with held:  # held while the pool starts and runs
            while not stop.is_set():
                sum(range(1000))

    side = [threading.Thread(target=busy, daemon=True) for _ in range(3)]
    for thread in side:
        thread.start()
    got: dict = {}

    def score() -> None:
        got["table"] = scored_table(preds, "english", workers=2)
        got["pids"] = map_ranges(_pid, list(range(20)), 20, workers=2, minimum=1)

    caller = threading.Thread(target=score)
    caller.start()
    caller.join(timeout=240)
    stop.set()
    assert not caller.is_alive(), "the pool started from a thread did not finish"
    many_scored, many_table = got["table"]
    assert list(many_scored) == list(one_scored) and many_table.equals(one_table)
    pids = got["pids"]
    assert os.getpid() not in {pid for pid, _, _ in pids}
    assert {(parent, method) for _, parent, method in pids} == {(os.getpid(), "spawn")}


@pytest.mark.parametrize("workers", [2, 4])
def test_the_figures_are_identical_with_1_2_and_4_workers(monkeypatch, workers):
    """The score table (every metric's columns included) and every prediction's score are the same, to the bit,
    on 1, 2 and 4 workers; and the same as each prediction scored alone."""
    preds = _predictions(400)
    one_scored, one_table = scored_table(preds, "english", workers=1)
    monkeypatch.setattr(engine, "PARALLEL_MIN", 10)
    many_scored, many_table = scored_table(preds, "english", workers=workers)
    assert many_table.equals(one_table) and many_table.num_rows == len(preds)
    assert list(many_scored) == list(one_scored) == [score_prediction(p, "english") for p in preds]
    assert score_predictions(preds, "english", workers=workers) == list(one_scored)


def test_a_table_built_a_group_at_a_time_is_the_table_of_one_pass(monkeypatch, caplog):
    """``scoring.table`` builds a table ``ROWS_AT_ONCE`` predictions at a time: with groups of 1, 7 and 64 the table
    is the one a single group of all of them gives, to the bit: a metric's column that only later examples give is
    empty before them, its failures flagged 1 (0 elsewhere, its ``errors`` flag its last column), and each
    metric's failures logged once a table, not once a group."""
    from whisperbench.scoring import metrics
    from whisperbench.scoring import table as tables

    def flaky(example):
        number = int(example.id[1:])
        if number % 11 == 3:
            raise ValueError("no value here")
        return {"late": 1.0} if number > 40 else ({"early": float(number)} if number % 2 else {})

    everything = (*metrics.per_example_metrics(), metrics.Metric("flaky", "a test's metric", per_example=flaky))
    monkeypatch.setattr(metrics, "per_example_metrics", lambda: everything)
    monkeypatch.setattr(tables, "per_example_metrics", lambda: everything)
    preds = [
        score_prediction(Prediction(f"u{i}", p.transcript, p.hypothesis), "english")
        for i, p in enumerate(_predictions(100))
    ]
    monkeypatch.setattr(tables, "ROWS_AT_ONCE", 100)
    caplog.clear()
    whole = tables._table(preds)
    assert [r.getMessage() for r in caplog.records if "flaky failed" in r.getMessage()] == [
        "metric flaky failed on example u3: ValueError: no value here",
        "metric flaky failed on 9 of 100 examples (their values left empty)",
    ]
    assert whole.column_names[-3:] == ["flaky.early", "flaky.late", "flaky.errors"]
    assert whole["flaky.errors"].to_pylist() == [1.0 if i % 11 == 3 else 0.0 for i in range(100)]
    assert whole["flaky.late"].to_pylist()[:41] == [None] * 41
    assert any(name.startswith("formatting.") for name in whole.column_names)  # the real metrics' sparse columns
    for size in (1, 7, 64):
        monkeypatch.setattr(tables, "ROWS_AT_ONCE", size)
        caplog.clear()
        assert tables._table(preds).equals(whole), size
        assert len([r for r in caplog.records if "flaky failed" in r.getMessage()]) == 2, size


def test_a_run_scored_while_written_starts_its_workers_with_it_and_sends_the_last_part_when_the_writing_ends(
    monkeypatch, tmp_path
):
    """``ScoredWhileWritten``: its workers start when it is made (they import while the first part is written),
    every ``WRITTEN_PART`` lines added go as a part, the rest when the writing ends; the result is what one process
    gives for the predictions the run store reads from the file, to the bit, and no worker is left."""
    import multiprocessing

    from whisperbench.scoring import table as tables
    from whisperbench.store.runs import RunStore

    monkeypatch.setattr(tables, "WRITTEN_PART", 40)
    preds = _predictions(100)
    store = RunStore(tmp_path / "run")
    before = set(multiprocessing.active_children())
    scoring = tables.ScoredWhileWritten("english", 2)
    try:
        assert len(set(multiprocessing.active_children()) - before) == 2  # started, nothing added yet
        with store.open_for_append() as writer:
            for group in (preds[:30], preds[30:70], preds[70:]):
                scoring.add(writer.append_all(group), group)
        assert len(scoring._parts) == 2  # two parts of 40 lines; 20 lines wait for the writing's end
        result = scoring.result(store.predictions_path)
        assert result is not None and len(scoring._parts) == 3
        one_scored, one_table = scored_table(store.read_predictions(), "english", workers=1)
        assert result[1].equals(one_table) and list(result[0]) == list(one_scored)
        assert list(result[0].raw) == store.read_predictions()
    finally:
        scoring.close()
    assert not set(multiprocessing.active_children()) - before


@pytest.mark.parametrize(
    "change",
    ["nothing", "a hypothesis edited", "a line added", "a line cut", "an id twice", "an unreadable line"],
)
def test_what_was_scored_while_written_is_used_only_where_the_file_holds_exactly_those_lines(tmp_path, change):
    """A file whose bytes are not exactly the lines added (edited, added to, cut), or whose lines hold an id twice
    or cannot be read: no result, so the run reads the file as its store does (the same id once, the later line;
    a malformed line named) and scores that afresh."""
    from whisperbench.scoring import table as tables
    from whisperbench.store.runs import PredictionWriter

    preds = _predictions(30)
    if change == "an id twice":
        preds[20] = Prediction(preds[3].id, preds[20].transcript, preds[20].hypothesis)
    if change == "an unreadable line":
        preds[5] = Prediction(preds[5].id, preds[5].transcript, preds[5].hypothesis, extra={"x": 1})
        preds[5].infer_s = "fast"  # type: ignore[assignment]
    path = tmp_path / "predictions.jsonl"
    scoring = tables.ScoredWhileWritten("english", 2)
    try:
        with PredictionWriter(path) as writer:
            scoring.add(writer.append_all(preds), preds)
        data = path.read_bytes()
        if change == "a hypothesis edited":
            hypothesis = b'"hypothesis": "' + preds[9].hypothesis.encode()
            same_size = b'"hypothesis": "' + b"x" * len(preds[9].hypothesis.encode())
            assert hypothesis in data and len(same_size) == len(hypothesis)
            path.write_bytes(data.replace(hypothesis, same_size, 1))  # the same size: only the digest tells
        elif change == "a line added":
            path.write_bytes(data + data.splitlines(keepends=True)[0])
        elif change == "a line cut":
            path.write_bytes(b"".join(data.splitlines(keepends=True)[1:]))
        result = scoring.result(path)
    finally:
        scoring.close()
    assert (result is not None) == (change == "nothing"), result


def test_workers_default_to_the_cores_this_process_may_use_that_others_leave_idle(monkeypatch):
    """No ``workers``: as many as ``os.sched_getaffinity`` allows, less the CPUs other processes keep busy (one: no
    pool at all). Fault injection: the machine's readings are set here; the next test takes real ones."""
    from whisperbench.process import host

    monkeypatch.setattr(host, "usable_cpus", lambda: 1)
    monkeypatch.setattr(host, "others_busy_now", lambda sample_s=0.2, since=None: 0.0)
    assert not engine.in_parallel(10**6, None)
    monkeypatch.setattr(host, "usable_cpus", lambda: 3)
    assert engine.pool_size(engine.PARALLEL_MIN, None) == 3
    assert engine.pool_size(engine.PARALLEL_MIN - 1, None) == 1
    assert engine.pool_size(engine.PARALLEL_MIN, 2) == 2  # asked for: as many as asked
    assert len(map_ranges(_pid, list(range(12)), 12, minimum=1)) == 12  # four ranges a worker, three workers
    monkeypatch.setattr(host, "others_busy_now", lambda sample_s=0.2, since=None: 1.6)
    assert engine.pool_size(10**6, None) == 1 and len(map_ranges(_pid, list(range(12)), 12, minimum=1)) == 1


def test_a_machine_whose_cores_other_processes_take_scores_in_one_process():
    """Real load: as many processes spinning as this process may use CPUs. Measured from a reading taken before
    (as a run takes one before it reads its dataset), the idle CPUs are 1 and no pool starts by default; a pool of
    2 beside 2 spinners was slower than one process (docs/benchmarks.md)."""
    from whisperbench.process.host import cpu_counters, idle_cpus, usable_cpus

    spin = [sys.executable, "-c", "while True: pass"]
    spinners = [subprocess.Popen(spin) for _ in range(usable_cpus())]
    try:
        time.sleep(0.3)  # they are running
        since = cpu_counters()
        time.sleep(0.5)
        assert idle_cpus(since) == 1
        assert engine.pool_size(10**6, None, since=since) == 1
    finally:
        for proc in spinners:
            proc.kill()
            proc.wait()


def test_sigkill_of_score_while_it_scores_leaves_no_process_behind(tmp_path, tiny_rows):
    """``whisperbench score`` of a recorded run large enough for the pool is killed with SIGKILL while its pool
    scores: every process it started (the workers, multiprocessing's helpers) is gone moments later."""
    import psutil

    count = engine.PARALLEL_MIN + 10_000
    audio = str(BUNDLED / "shortform" / tiny_rows[1]["audio"])
    words = tiny_rows[1]["text"].split()
    rows = [{"id": f"u{i:05d}", "audio": audio, "text": " ".join(words[: 3 + i % 10])} for i in range(count)]
    manifest, hypotheses = tmp_path / "manifest.jsonl", tmp_path / "hyps.jsonl"
    manifest.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    hypotheses.write_text("".join(json.dumps({"id": r["id"], "hypothesis": r["text"]}) + "\n" for r in rows))
    command = [sys.executable, "-m", "whisperbench", "score", "--dataset", str(manifest), "--hypotheses",
               str(hypotheses), "--runs-dir", str(tmp_path / "runs"), "--name", "killed", "--json",
               "--scoring-workers", "2"]  # fmt: skip  # a pool even where the other test worker takes a core
    env = dict(os.environ, WHISPERBENCH_CACHE=str(tmp_path / "cache"))
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    parent = psutil.Process(proc.pid)
    deadline, workers = time.monotonic() + 240, []
    while time.monotonic() < deadline and proc.poll() is None and not workers:
        workers = [p for p in _descendants(parent) if "spawn_main" in " ".join(_cmdline(p))]
        time.sleep(0.02)
    assert workers and proc.poll() is None, "score ended before its pool started"
    time.sleep(0.5)  # the workers are scoring their parts now
    started = _descendants(parent)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and [p for p in started if _alive(p)]:
        time.sleep(0.1)
    assert not [p for p in started if _alive(p)], [_cmdline(p) for p in started if _alive(p)]
    assert not (tmp_path / "runs" / "killed" / "summary.json").exists()  # it was killed before its end


def _sleep_part(items: list, start: int, stop: int) -> None:
    """A part that takes a minute (a worker killed with its parent never finishes it)."""
    time.sleep(60)


def test_pool_workers_end_at_once_with_the_process_that_started_them(tmp_path):
    """A process whose pool workers are busy for a minute is killed with SIGKILL: its workers are gone within
    seconds (the kernel's parent-death signal, or their watch of the parent), not when their work is done."""
    import psutil

    probe = (
        "import sys\n"
        "from whisperbench.scoring.engine import map_ranges\n"
        "from tests.test_scoring_pool import _sleep_part\n"
        "map_ranges(_sleep_part, list(range(8)), 8, workers=2, minimum=1)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", probe], cwd=str(REPO))
    parent = psutil.Process(proc.pid)
    deadline, workers = time.monotonic() + 120, []
    while time.monotonic() < deadline and proc.poll() is None and len(workers) < 2:
        workers = [p for p in _descendants(parent) if "spawn_main" in " ".join(_cmdline(p))]
        time.sleep(0.05)
    assert len(workers) == 2, "the pool did not start"
    time.sleep(1.0)  # both in their minute of work
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and [p for p in workers if _alive(p)]:
        time.sleep(0.1)
    assert not [p for p in workers if _alive(p)]


def _descendants(process) -> list:
    import psutil

    try:
        return process.children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def _cmdline(process) -> list[str]:
    import psutil

    try:
        return process.cmdline()
    except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
        return []


def _alive(process) -> bool:
    import psutil

    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_the_command_exits_with_main_s_code_after_its_exit_handlers_and_finalizers(tmp_path):
    """``whisperbench`` (``cli.entry``) ends as any Python program does: the exit status is main's code, and the
    exit handlers and the interpreter's teardown (finalizers) run."""
    probe = (
        "import atexit, sys\n"
        "class Torn:\n"
        "    def __del__(self):\n"
        "        print('TORN DOWN', flush=True)\n"
        "kept = Torn()\n"
        "atexit.register(print, 'HANDLER RAN')\n"
        "import whisperbench.cli as cli\n"
        "sys.argv = ['whisperbench', *sys.argv[1:]]\n"
        "cli.entry()\n"
    )
    gate = ["gate", "--reference", "a", "--candidate", "b", "--runs-dir", str(tmp_path)]
    out = subprocess.run([sys.executable, "-c", probe, *gate], capture_output=True, text=True)
    assert out.returncode == 2 and "CANNOT JUDGE" in out.stderr, out.stderr  # gate's own code: cannot judge
    assert "HANDLER RAN" in out.stdout and "TORN DOWN" in out.stdout, out.stdout


def test_a_scoring_pool_size_below_one_is_refused_naming_the_option(tiny_short, tmp_path, capsys):
    """``scoring_workers=0`` (the API) and ``--scoring-workers 0`` (the command line) are refused before anything
    is stored, each naming what is wrong."""
    from whisperbench.cli import main
    from whisperbench.errors import OptionError
    from whisperbench.harness import RunRequest

    with pytest.raises(OptionError, match=r"scoring_workers 0 \(at least 1\)"):
        RunRequest("recorded", "h.jsonl", str(tiny_short), scoring_workers=0)
    hypotheses = tmp_path / "h.jsonl"
    hypotheses.write_text('{"id": "jfk", "hypothesis": "and so"}\n', encoding="utf-8")
    args = ["score", "--dataset", str(tiny_short), "--hypotheses", str(hypotheses), "--scoring-workers", "0"]
    assert main([*args, "--runs-dir", str(tmp_path / "runs")]) == 2
    assert "scoring_workers 0 (at least 1)" in capsys.readouterr().err and not (tmp_path / "runs").exists()
