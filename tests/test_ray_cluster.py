"""The Ray backend on a real multi-node cluster started here (``ray.cluster_utils.Cluster``: a head node and two
worker nodes, each its own raylet, GCS-joined by address as ``ray start --address`` does): transcripts equal the
in-process run's, run.json records the address joined and the nodes, a forwarded secret is in no file of the
run, and killing a worker node mid-run loses nothing.

The cluster has its own temporary folder (``RAY_TMPDIR``: Ray's address file and session logs stay out of
/tmp/ray, so no other Ray on this machine joins it) and free ports; its processes are this test's children and
are stopped by ``Cluster.shutdown`` (by process, never ``ray stop``, which would stop every Ray on the machine).
"""

import json
import logging
import os
import shutil
import socket
import tempfile
import uuid
from pathlib import Path

import pytest

from whisperbench.adapters import DecodingOptions
from whisperbench.harness import RunRequest, open_run, run_evaluation

from .conftest import REPO

ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install 'whisperbench[ray]'")
cluster_utils = pytest.importorskip("ray.cluster_utils", reason="this Ray has no ray.cluster_utils")
_SOURCE = str(Path(__import__("whisperbench").__file__).resolve().parents[1])  # this checkout's package


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def three_nodes(monkeypatch):
    """A head node without CPUs (it holds the GCS, so it is never the one killed) and two worker nodes of 1 CPU."""
    if ray.is_initialized():
        ray.shutdown()
    temp = tempfile.mkdtemp(prefix="wbray", dir="/tmp")  # short: Ray's socket paths must fit 107 characters
    monkeypatch.setenv("RAY_TMPDIR", temp)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    cluster = cluster_utils.Cluster(
        initialize_head=True,
        shutdown_at_exit=False,
        head_node_args={
            "num_cpus": 0,
            "gcs_server_port": _free_port(),
            "include_dashboard": False,
            "_system_config": {"health_check_period_ms": 500, "health_check_failure_threshold": 2},
        },
    )
    try:
        workers = [cluster.add_node(num_cpus=1) for _ in range(2)]
        cluster.wait_for_nodes()
        yield cluster, workers, Path(temp)
    finally:
        if ray.is_initialized():
            ray.shutdown()
        cluster.shutdown()
        shutil.rmtree(temp, ignore_errors=True)


def test_a_three_node_cluster_joined_by_address_equals_in_process_and_a_killed_node_loses_nothing(
    three_nodes, tmp_path, tiny_short, monkeypatch, caplog
):
    cluster, workers, ray_temp = three_nodes
    cache = os.environ.get("WHISPERBENCH_TEST_CACHE") or str(tmp_path / "cache")
    secret = f"sk-{uuid.uuid4().hex}"
    monkeypatch.setenv("WHISPERBENCH_CACHE", cache)
    monkeypatch.setenv("WB_CLUSTER_SECRET", secret)
    runs = str(tmp_path / "runs")
    # six examples, two queued per actor: when the first prediction comes back, work is still pending, and the driver
    # hands the next of it to the killed node's worker (a call that fails: it is recorded dead, its examples
    # retried). With four, every example could be queued at the start and that worker finish them all before the
    # kill landed: it was then recorded as closed, a race this test lost once.
    common = dict(runs_dir=runs, limit=6, decoding=DecodingOptions(threads=1, extra={"compute_type": "int8"}))
    run_evaluation(RunRequest("faster-whisper", "tiny.en", str(tiny_short), name="local", **common))

    store = Path(runs) / "cluster" / "predictions.jsonl"
    killed: list[str] = []

    def kill_its_node(_count):  # right after the first prediction: its worker still has an example queued
        if not killed:
            node_id = json.loads(store.read_text().splitlines()[-1])["extra"]["worker"]["node"]
            cluster.remove_node(next(n for n in workers if n.node_id == node_id), allow_graceful=False)
            killed.append(node_id)

    caplog.set_level(logging.INFO, logger="whisperbench")
    runtime_env = json.dumps({"env_vars": {"PYTHONPATH": os.pathsep.join([_SOURCE, str(REPO)])}})
    result = run_evaluation(
        RunRequest(
            "faster-whisper",
            "tiny.en",
            str(tiny_short),
            name="cluster",
            backend="ray",
            workers=2,
            address=cluster.address,
            runtime_env=runtime_env,
            ray_env=("WHISPERBENCH_CACHE", "WB_CLUSTER_SECRET"),
            **common,
        ),
        progress=kill_its_node,
    )

    local, remote = open_run("local", runs), open_run("cluster", runs)
    assert killed and result.computed == 6 and result.summary.num_failed == 0
    assert {p.id: p.hypothesis for p in remote.predictions} == {p.id: p.hypothesis for p in local.predictions}
    assert result.summary.wer == local.summary.wer
    backend = result.info["backend_info"]
    assert backend["address"] == backend["joined_address"] == cluster.address
    assert backend["node_count"] == 3 and sorted(n["cpus"] for n in backend["nodes"]) == [0.0, 1.0, 1.0]
    assert backend["forwarded_env"] == ["WB_CLUSTER_SECRET", "WHISPERBENCH_CACHE"]
    # the killed node's worker is recorded dead, its queued examples retried on the other node
    dead = [a for a in backend["actors"] if a["node_id"] == killed[0]]
    assert dead and all(a["status"] == "died" for a in dead) and backend["deaths"]
    assert backend["retried_examples"], "the killed node's worker had an example queued"
    by_id = {p.id: p for p in remote.predictions}
    for ex_id in backend["retried_examples"]:
        assert by_id[ex_id].extra["worker"]["node"] != killed[0] and by_id[ex_id].extra["attempts"] == 2
    assert {a["node_id"] for a in backend["actors"] if a["node_id"]} == {n.node_id for n in workers}
    said = [r.getMessage() for r in caplog.records if r.levelname == "WARNING" and "died" in r.getMessage()]
    assert any(
        f"node {killed[0][:8]}" in m and "retried on other workers" in m and "nothing is lost" in m for m in said
    ), said
    # the forwarded secret reached the workers' environment only (their transcripts need WHISPERBENCH_CACHE, sent
    # the same way): no file of the run holds it
    for path in Path(runs).rglob("*"):
        assert not path.is_file() or secret.encode() not in path.read_bytes(), path
    assert secret not in caplog.text
    # nor do Ray's own session logs on any node (a runtime_env's env_vars would be there: its agent logs them)
    assert not [p for p in ray_temp.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]
