"""Options and secrets (issue 69, item 7): adapter ``-o`` numbers are range-checked before the run, ``sweep``'s
limits before its first variant, ``plan --examples 1e20`` is our own message; redaction is by rule — every URL
query value, every URL's user information, path segments that look like keys — in run.json, predictions.jsonl
and what an export prints."""

from __future__ import annotations

import json

import pytest

from whisperbench.cli import main
from whisperbench.core.redact import redact_text, redact_url

from .conftest import BUNDLED

MANIFEST = str(BUNDLED / "shortform" / "manifest.jsonl")
RECORDED = str(BUNDLED / "recorded" / "openai-whisper-base.jsonl")


@pytest.mark.parametrize(
    "adapter, option, named",
    [
        ("whisper-live", "chunk_s=nan", "option chunk_s"),
        ("whisper-live", "chunk_s=0", "option chunk_s"),
        ("whisper-live", "chunk_s=-1", "option chunk_s"),
        ("whisper-live", "no_speech_thresh=nan", "option no_speech_thresh"),
        ("whisperlivekit", "frame_threshold=-1", "option frame_threshold"),
        ("openai-whisper", "batch_size=0", "option batch_size"),
        ("faster-whisper", "temperature=nan", "option temperature"),
        ("faster-whisper", "no_speech_threshold=2", "option no_speech_threshold"),
        ("openai-api", "timeout_s=-5", "option timeout_s"),
    ],
)
def test_a_number_out_of_range_is_refused_before_the_run(tmp_path, capsys, adapter, option, named):
    runs = tmp_path / "runs"
    args = ["run", "--adapter", adapter, "--model", "tiny.en", "--dataset", MANIFEST, "--runs-dir", str(runs)]
    assert main([*args, "-o", option, "--limit", "1", "--no-warmup"]) == 2
    err = capsys.readouterr().err
    assert named in err and "Traceback" not in err, err
    assert not runs.exists() or not any(runs.rglob("predictions.jsonl"))  # nothing ran


def test_a_number_in_range_still_parses():
    from whisperbench.adapters.base import DecodingOptions

    opts = DecodingOptions.from_pairs(["logprob_threshold=-1", "no_speech_threshold=0.6", "temperature=0.2"])
    assert (opts.logprob_threshold, opts.no_speech_threshold, opts.temperature) == (-1.0, 0.6, 0.2)


def test_sweep_refuses_its_limits_before_the_first_variant(tmp_path, capsys):
    runs = tmp_path / "runs"
    code = main(["sweep", "--model", "tiny.en", "--dataset", MANIFEST, "--min-qoi", "200", "--runs-dir", str(runs)])
    err = capsys.readouterr().err
    assert code == 2 and "--min-qoi" in err and "[1/" not in err, err
    assert not runs.exists() or not any(runs.iterdir())


def test_plan_with_an_absurd_example_count_is_our_message(tmp_path, capsys):
    assert (
        main(["score", "--dataset", MANIFEST, "--hypotheses", RECORDED, "--name", "b", "--runs-dir", str(tmp_path)])
        == 0
    )
    capsys.readouterr()
    assert main(["plan", "--reference", "b", "--runs-dir", str(tmp_path), "--examples", "1e20"]) == 2
    err = capsys.readouterr().err
    assert "examples 1e+20 (at most 10,000,000)" in err and "bracketed" not in err, err


SECRETS = ("AZFUNCKEY123", "eyJhbGciOiJIUzI1NiJ9x", "hunter2pw", "sk4e5f6a7b8c9d0e1f2a3b4c5d", "userinfo9")


@pytest.mark.parametrize(
    "url",
    [
        "https://fn.azurewebsites.net/api/transcribe?code=AZFUNCKEY123",
        "https://h.example/v1?jwt=eyJhbGciOiJIUzI1NiJ9x",
        "https://h.example/v1?pass=hunter2pw&x=1",
        "https://h.example/keys/sk4e5f6a7b8c9d0e1f2a3b4c5d/v1/audio",
        "https://me:userinfo9@h.example/v1",
    ],
)
def test_secrets_outside_any_name_list_are_redacted(url):
    redacted = redact_url(url)
    assert not any(secret in redacted for secret in SECRETS), redacted
    assert "h.example" in redacted or "azurewebsites" in redacted  # the endpoint is still named
    assert not any(secret in redact_text(f"error at {url}: refused") for secret in SECRETS)


def test_path_segments_that_are_names_stay():
    url = "https://huggingface.co/openai/whisper-large-v3-turbo/resolve/main/ggml-base.en-q5_0.bin"
    assert redact_url(url) == url


def test_run_json_and_predictions_keep_no_secret(tmp_path):
    """A failed example's error quoting the endpoint, and run.json's options holding it, stored redacted."""
    from whisperbench.store.runs import RunStore
    from whisperbench.types import Prediction

    store = RunStore(tmp_path / "r")
    store.path.mkdir()
    leaky = "https://fn.azurewebsites.net/api/x?code=AZFUNCKEY123&jwt=eyJhbGciOiJIUzI1NiJ9x"
    store.write_info({"adapter": "openai-api", "decoding": {"extra": {"base_url": leaky}}})
    with store.open_for_append() as writer:
        writer.append(Prediction("a", "hi", "", status="error", error=f"example a: POST {leaky} refused"))
    written = "".join(p.read_text(encoding="utf-8") for p in store.path.iterdir() if p.is_file())
    assert "fn.azurewebsites.net" in written
    assert not any(secret in written for secret in SECRETS), written


def test_an_export_prints_no_secret_of_the_tracking_uri(tmp_path, capsys):
    pytest.importorskip("mlflow", reason="pip install 'whisperbench[mlflow]'")
    assert (
        main(["score", "--dataset", MANIFEST, "--hypotheses", RECORDED, "--name", "b", "--runs-dir", str(tmp_path)])
        == 0
    )
    capsys.readouterr()
    uri = "http://127.0.0.1:9/api?code=AZFUNCKEY123"
    assert main(["export", "b", "--runs-dir", str(tmp_path), "--to", "mlflow", "--tracking-uri", uri]) == 2
    captured = capsys.readouterr()
    assert "AZFUNCKEY123" not in captured.out + captured.err and "REDACTED" in captured.err
    json.dumps(captured.err)
