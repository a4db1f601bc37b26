"""A sweep killed with SIGKILL leaves nothing behind that holds a run: its variant's process dies with it,
and the next writer takes over a lock whose recorded writer is gone (saying so), while a live writer's lock
is still refused. Real processes, real signals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from whisperbench.adapters.base import Adapter
from whisperbench.errors import RunStoreError
from whisperbench.harness import RunRequest, open_run, run_evaluation
from whisperbench.store.runs import OWNER, RunStore
from whisperbench.types import Transcript

from .conftest import REPO

SOURCE = str(Path(__import__("whisperbench").__file__).resolve().parents[1])  # this checkout's package
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), SOURCE])}


class SlowEcho(Adapter):
    """Echoes the transcript, each example held back while the file ``hold`` exists (at most 60 s): a run
    that is still going when its sweep is killed."""

    name = "test-slow-echo"
    options = {"hold": ""}
    uses_weights = False

    def load(self):
        pass

    def transcribe(self, audio, example, *, long_form):
        deadline = time.monotonic() + 60
        while Path(self.settings["hold"]).exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        return Transcript(text=example.text)


def _request(manifest: Path, runs: Path) -> RunRequest:
    from whisperbench.adapters import DecodingOptions

    return RunRequest(
        f"{__name__}:SlowEcho",
        "m",
        str(manifest),
        runs_dir=str(runs),
        name="slow",
        warmup=False,
        decoding=DecodingOptions(threads=1, extra={"hold": str(runs.parent / "hold")}),
    )


def _wait_for(condition, what: str, within_s: float = 60.0):
    """Poll ``condition`` until it holds (a bound on a wait, never a measured time)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    pytest.fail(f"{what}: not within {within_s:g} s")


def _owner(run: Path):
    try:
        return json.loads((run / OWNER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def test_a_sweep_killed_with_sigkill_leaves_no_child_holding_the_run(tmp_path, local_manifest, caplog):
    """The sweep's own way to run a variant (a fresh process); the sweep process is killed with SIGKILL while
    the variant is transcribing; the variant's process must go too, and the resume takes the lock over."""
    manifest, runs = local_manifest(), tmp_path / "runs"
    (tmp_path / "hold").touch()  # examples wait while it exists
    driver = tmp_path / "driver.py"
    driver.write_text(
        "import pickle, sys\n"
        "from whisperbench.harness.sweep import _in_fresh_process, _run_in_child\n"
        "if __name__ == '__main__':\n"
        f"    _in_fresh_process(_run_in_child, pickle.loads({pickle_request(manifest, runs)!r}))\n"
    )
    log = open(tmp_path / "sweep.log", "wb")  # noqa: SIM115 - the sweep's log while it runs, closed below
    sweep = subprocess.Popen(
        [sys.executable, str(driver)],
        env=ENV,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    log.close()
    child = None
    try:
        owner = _wait_for(  # the lock is taken before run.json is written: wait for both (the run has started)
            lambda: (_owner(runs / "slow") if RunStore(runs / "slow").exists() else None) or sweep.poll() is not None,
            "the variant's process taking the run's lock and writing run.json",
        )
        assert sweep.poll() is None, (tmp_path / "sweep.log").read_text(errors="replace")
        child = owner["pid"]
        assert child != sweep.pid and psutil.Process(child).ppid() == sweep.pid
        sweep.send_signal(signal.SIGKILL)
        sweep.wait(timeout=30)
        _wait_for(
            lambda: not psutil.pid_exists(child) or psutil.Process(child).status() == psutil.STATUS_ZOMBIE,
            f"the variant's process (pid {child}) ending with the sweep",
        )
    finally:
        for pid in (sweep.pid, child):
            if pid is not None and psutil.pid_exists(pid):
                os.kill(pid, signal.SIGKILL)
    (tmp_path / "hold").unlink()
    assert open_run("slow", runs).coverage.status == "stopped"  # run.json says running; its writer is gone
    with caplog.at_level("WARNING", logger="whisperbench"):
        result = run_evaluation(_request(manifest, runs))  # the resume
    assert result.summary.num_examples == 6 and result.summary.num_failed == 0
    assert f"took over its lock from pid {child}" in caplog.text


def pickle_request(manifest: Path, runs: Path) -> bytes:
    import pickle

    return pickle.dumps(_request(manifest, runs))


def _hold_lock(path: Path) -> subprocess.Popen:
    """Another process holding the run's lock file (as a child that inherited the writer's lock would)."""
    script = (
        "import fcntl, os, sys, time\nfd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)\n"
        "fcntl.flock(fd, fcntl.LOCK_EX)\nprint('held', flush=True)\ntime.sleep(120)\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", script, str(path)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


def _dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(done.stdout)


@pytest.mark.skipif(sys.platform == "win32", reason="flock: POSIX file locks")
def test_a_lock_whose_writer_is_gone_is_taken_over_and_a_live_one_refused(tmp_path, caplog):
    from whisperbench.store.runs import this_process

    store = RunStore(tmp_path / "run")
    store.path.mkdir()
    holder = _hold_lock(store.path / ".lock")
    try:
        live = {**this_process(), "pid": holder.pid, "started": psutil.Process(holder.pid).create_time()}
        (store.path / OWNER).write_text(json.dumps(live))
        with pytest.raises(RunStoreError, match=f"being written by pid {holder.pid}"), store.lock():
            pass
        gone = {**this_process(), "pid": _dead_pid()}
        (store.path / OWNER).write_text(json.dumps(gone))
        with caplog.at_level("WARNING", logger="whisperbench"), store.lock():
            assert _owner(store.path)["pid"] == os.getpid()
        assert f"took over its lock from pid {gone['pid']}" in caplog.text and "no longer running" in caplog.text
        assert not (store.path / OWNER).exists()
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.skipif(sys.platform == "win32", reason="flock: POSIX file locks")
def test_two_writers_finding_an_orphaned_lock_at_once_take_it_over_once(tmp_path):
    """Both see a lock held by an orphan whose writer is gone: one takes it over, the other is refused (it
    finds the first alive), never two writers."""
    from whisperbench.store.runs import this_process

    store = RunStore(tmp_path / "run")
    store.path.mkdir()
    release = tmp_path / "release"
    release.touch()
    script = (
        "import sys, time\nfrom pathlib import Path\nfrom whisperbench.store.runs import RunStore\n"
        "from whisperbench.errors import RunStoreError\n"
        "try:\n    with RunStore(Path(sys.argv[1])).lock():\n        print('writer', flush=True)\n"
        "        while Path(sys.argv[2]).exists(): time.sleep(0.1)\n"
        "except RunStoreError as exc:\n    print('refused', exc, flush=True)\n"
    )
    holder = _hold_lock(store.path / ".lock")
    (store.path / OWNER).write_text(json.dumps({**this_process(), "pid": _dead_pid()}))
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(store.path), str(release)], env=ENV, stdout=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    try:
        _wait_for(lambda: any(w.poll() is not None for w in writers), "one of the two writers being refused")
        release.unlink()
        outputs = [w.communicate(timeout=60)[0] for w in writers]
    finally:
        for process in [holder, *writers]:
            if process.poll() is None:
                process.kill()
                process.wait()
    assert sorted(out.split()[0] for out in outputs) == ["refused", "writer"], outputs
    assert "being written by pid" in next(out for out in outputs if out.startswith("refused"))
