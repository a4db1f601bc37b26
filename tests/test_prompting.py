"""Vocabulary prompting (docs/keywords.md): --prompt and --prompt-from-keywords reach each implementation by its own
mechanism, are part of the run's decoding identity, and an implementation that cannot take them is refused before
the run, by name."""

import json
from types import SimpleNamespace

import pytest

from whisperbench.adapters import ADAPTERS
from whisperbench.adapters.base import DecodingOptions, refuse_prompt
from whisperbench.cli import main
from whisperbench.errors import OptionError
from whisperbench.store.run_info import RunInfo, identity_differences
from whisperbench.types import Example

from .conftest import BUNDLED

EXAMPLE = Example("a", b"", "I met Wojciech in Kraków", extra={"keywords": ["Wojciech", "Kraków"]})


def _adapter(name, **decoding):
    cls = ADAPTERS.get(name)
    return cls("tiny.en", DecodingOptions(**decoding))


def test_the_prompt_is_the_text_then_the_examples_keywords():
    assert DecodingOptions(prompt_from_keywords=True).prompt_for(EXAMPLE) == "Wojciech, Kraków"
    assert DecodingOptions(initial_prompt="Names:", prompt_from_keywords=True).prompt_for(EXAMPLE) == (
        "Names: Wojciech, Kraków"
    )
    assert DecodingOptions(initial_prompt="Names:").prompt_for(EXAMPLE) == "Names:"
    assert DecodingOptions(prompt_from_keywords=True).prompt_for(Example("b", b"", "hi")) is None
    kwargs = DecodingOptions(prompt_from_keywords=True).whisper_transcribe_kwargs(False, False, EXAMPLE)
    assert kwargs["initial_prompt"] == "Wojciech, Kraków"  # openai-whisper's and mlx-whisper's transcribe


def test_faster_whisper_gets_the_examples_prompt_as_its_initial_prompt():
    adapter = _adapter("faster-whisper", prompt_from_keywords=True)
    seen = {}

    def transcribe(audio, **kwargs):
        seen.update(kwargs)
        return [], SimpleNamespace(language="en", language_probability=1.0)

    adapter.net, adapter.multilingual = SimpleNamespace(transcribe=transcribe), False
    adapter.transcribe(None, EXAMPLE, long_form=False)
    assert seen["initial_prompt"] == "Wojciech, Kraków"


def test_whisper_cpp_sends_each_examples_prompt_with_its_call():
    """whisper.cpp's worker sets ``whisper_full_params.initial_prompt`` on each call: the example's own terms, and
    no prompt for an example without any (the previous example's is not left in place)."""
    adapter = _adapter("whisper-cpp", prompt_from_keywords=True)
    refuse_prompt(adapter)  # one prompt per example: not refused
    calls = []

    def call(name, *args, timeout_s=None):
        calls.append(args)
        return {"segments": [], "language": "en", "tokens": None, "decoded": 0}

    adapter._worker, adapter.multilingual = SimpleNamespace(call=call, last_cpu_s=0.0), False
    adapter.transcribe(None, EXAMPLE, long_form=False)
    adapter.transcribe(None, Example("b", b"", "hi"), long_form=False)
    assert [args[-1] for args in calls] == ["Wojciech, Kraków", None]


def test_the_openai_api_request_carries_the_prompt():
    adapter = _adapter("openai-api", initial_prompt="Names:", prompt_from_keywords=True)
    assert adapter._request_options(False, EXAMPLE)["prompt"] == "Names: Wojciech, Kraków"
    assert "prompt" not in _adapter("openai-api")._request_options(False, EXAMPLE)


@pytest.mark.parametrize(
    "name, mechanism, each",
    [
        ("openai-whisper", "initial_prompt", True),
        ("faster-whisper", "initial_prompt", True),
        ("mlx", "initial_prompt", True),
        ("transformers", "prompt_ids", True),
        ("openai-api", "prompt", True),
        ("whisper-cpp", "initial_prompt", True),
        ("whisperkit", "--prompt", False),
        ("jax", "initial_prompt", False),
        ("coreml", None, True),
        ("recorded", None, True),
    ],
)
def test_each_implementation_declares_its_prompt_mechanism(name, mechanism, each):
    cls = ADAPTERS.get(name)
    assert cls.prompting == mechanism and getattr(cls, "prompts_each_example", True) is each


def test_an_implementation_without_prompts_is_refused_by_name():
    with pytest.raises(OptionError, match="adapter recorded cannot take a vocabulary prompt"):
        refuse_prompt(_adapter("recorded", initial_prompt="Names:"))
    refuse_prompt(_adapter("recorded"))  # no prompt: nothing to refuse
    with pytest.raises(OptionError, match="adapter whisperkit takes one prompt for the whole run"):
        refuse_prompt(_adapter("whisperkit", prompt_from_keywords=True))
    refuse_prompt(_adapter("whisperkit", initial_prompt="Names:"))
    batched = ADAPTERS.get("openai-whisper")(
        "tiny.en", DecodingOptions(prompt_from_keywords=True, extra={"batch_size": "4"})
    )
    with pytest.raises(OptionError, match="one prompt per batch .*batch_size=1"):
        refuse_prompt(batched)


def test_run_refuses_before_anything_is_stored(tmp_path, capsys):
    hyps = BUNDLED / "recorded" / "openai-whisper-tiny.en.jsonl"
    argv = ["run", "--adapter", "recorded", "--model", str(hyps), "--dataset", "tiny-shortform"]
    assert main(argv + ["--prompt", "Americans", "--runs-dir", str(tmp_path), "--name", "p"]) == 2
    assert "adapter recorded cannot take a vocabulary prompt" in capsys.readouterr().err
    assert not (tmp_path / "p").exists()


def test_the_prompt_is_part_of_the_runs_identity():
    plain = RunInfo(decoding=DecodingOptions().to_json())
    prompted = RunInfo(decoding=DecodingOptions(prompt_from_keywords=True).to_json())
    assert identity_differences(plain, prompted) == ["decoding prompt_from_keywords: True (the stored run: False)"]
    older = RunInfo(decoding={k: v for k, v in DecodingOptions().to_json().items() if k != "prompt_from_keywords"})
    assert identity_differences(older, plain) == []  # a run stored before prompting resumes as it was
    assert json.dumps(DecodingOptions(initial_prompt="x").to_json())  # recorded in run.json as it is
