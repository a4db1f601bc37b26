"""``run --warm-load``: after the examples the model is loaded once more in the same process and timed — the load a
service pays with the library imported and the weights in the page cache, beside ``load_s``, the cold start. Real
faster-whisper runs prove the figure reaches summary.json, run.json, ``compare --json`` and the report's speed
table; fault injection (a load that fails the second time) proves a failed reload never costs the run."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from whisperbench.adapters import DecodingOptions
from whisperbench.adapters.base import Adapter
from whisperbench.errors import OptionError
from whisperbench.harness import RunRequest, run_evaluation
from whisperbench.types import Transcript


def _cli(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "whisperbench", *args], cwd=cwd, capture_output=True, text=True, timeout=600
    )


def test_a_warm_reload_of_a_real_model_is_timed_and_reported(tmp_path):
    runs = tmp_path / "runs"
    common = ["--model", "tiny.en", "--dataset", "tiny-shortform", "--limit", "1", "--runs-dir", str(runs), "--quiet"]
    for name, extra in (("ref", []), ("cand", ["-o", "compute_type=int8"])):
        done = _cli("run", "--adapter", "faster-whisper", "--name", name, "--warm-load", *extra, *common, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    plain = _cli("run", "--adapter", "faster-whisper", "--name", "plain", *common, cwd=tmp_path)
    assert plain.returncode == 0, plain.stderr

    summary = json.loads((runs / "cand" / "summary.json").read_text(encoding="utf-8"))
    info = json.loads((runs / "cand" / "run.json").read_text(encoding="utf-8"))
    assert summary["load_warm_s"] > 0 and summary["load_warm_s"] == info["load_warm_s"]
    assert summary["load_s"] > 0 and info["execution"]["warm_load"] is True
    assert "load_warm_s" not in json.loads((runs / "plain" / "summary.json").read_text(encoding="utf-8"))

    compared = _cli(
        "compare", "--reference", "ref", "--candidate", "cand", "--runs-dir", str(runs), "--json", cwd=tmp_path
    )
    assert compared.returncode == 0, compared.stderr
    speed = json.loads(compared.stdout)[0]["speed"]
    ref_summary = json.loads((runs / "ref" / "summary.json").read_text(encoding="utf-8"))
    assert speed["load_warm_s"] == {"reference": ref_summary["load_warm_s"], "candidate": summary["load_warm_s"]}
    report = _cli("report", "--runs-dir", str(runs), "--reference", "ref", "--out", "board.md", "--quiet", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    speed_section = (tmp_path / "board.md").read_text(encoding="utf-8").split("## Speed", 1)[1]
    assert "warm load s" in speed_section and f"{summary['load_warm_s']:.2f}" in speed_section


def test_warm_load_is_refused_where_the_reload_would_not_be_warm(tmp_path, local_manifest):
    for settings in ({"workers": 2}, {"isolate": True}, {"timeout_s": 30.0}, {"backend": "process-pool"}):
        request = RunRequest(
            f"{__name__}:FailsSecondLoad",
            "m",
            str(local_manifest()),
            runs_dir=str(tmp_path),
            warm_load=True,
            **settings,
        )
        with pytest.raises(OptionError, match="--warm-load reloads the model in the process that ran it"):
            run_evaluation(request)


class FailsSecondLoad(Adapter):
    """Fault injection only: echoes the transcript; its second ``load`` raises."""

    name = "test-fails-second-load"
    uses_weights = False
    loads = 0

    def load(self):
        type(self).loads += 1
        if type(self).loads > 1:
            raise RuntimeError("second load refused")

    def transcribe(self, audio, example, *, long_form):
        return Transcript(text=example.text)


def test_a_failed_reload_leaves_the_run_whole_and_the_figure_empty(tmp_path, local_manifest, caplog):
    FailsSecondLoad.loads = 0
    request = RunRequest(
        f"{__name__}:FailsSecondLoad",
        "m",
        str(local_manifest()),
        runs_dir=str(tmp_path),
        name="r",
        warmup=False,
        warm_load=True,
        decoding=DecodingOptions(threads=1),
    )
    result = run_evaluation(request)
    assert FailsSecondLoad.loads == 2 and result.summary.num_failed == 0 and result.summary.wer == 0.0
    assert result.summary.load_warm_s is None and result.summary.load_s is not None
    assert "the warm reload of the model failed: RuntimeError: second load refused" in caplog.text
