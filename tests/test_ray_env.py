"""The Ray workers' environment (harness/ray_env.py): --runtime-env read as JSON or a JSON/YAML file,
--ray-env names forwarded from the driver, and run.json's record holding names, never values (Ray not needed)."""

import json

import pytest

from whisperbench.errors import OptionError
from whisperbench.harness import RunRequest, ray_env
from whisperbench.harness.runner import backend_of

SECRET = "sk-test-0123456789abcdef"


def test_runtime_env_from_json_text_and_files(tmp_path):
    env = {"env_vars": {"TOKEN": SECRET, "WHISPERBENCH_CACHE": "/shared/cache"}, "working_dir": "https://u:pw@h/x.zip"}
    (tmp_path / "env.json").write_text(json.dumps(env))
    (tmp_path / "env.yaml").write_text(
        "env_vars:\n  TOKEN: " + SECRET + "\n  WHISPERBENCH_CACHE: /shared/cache\nworking_dir: https://u:pw@h/x.zip\n"
    )
    assert ray_env.load_runtime_env(json.dumps(env)) == env
    assert ray_env.load_runtime_env(str(tmp_path / "env.json")) == env
    assert ray_env.load_runtime_env(str(tmp_path / "env.yaml")) == env
    record = ray_env.describe(env, ["B_VAR", "A_VAR", "B_VAR"])
    assert record == {
        "runtime_env": {"env_vars": ["TOKEN", "WHISPERBENCH_CACHE"], "working_dir": "https://h/x.zip"},
        "forwarded_env": ["A_VAR", "B_VAR"],
    }
    assert SECRET not in json.dumps(record) and "pw" not in json.dumps(record)


def test_bad_runtime_env_and_names_are_refused_without_showing_values(tmp_path):
    (tmp_path / "bad.json").write_text('{"env_vars": {"TOKEN": "' + SECRET + '"')  # truncated
    for value, match in (
        (str(tmp_path / "missing.json"), "neither JSON"),
        ("[1]", "neither JSON"),
        ('{"env_vars": {"N": 1}}', "must map names to strings"),
        (str(tmp_path / "bad.json"), "cannot be read"),
    ):
        with pytest.raises(OptionError, match=match) as err:
            ray_env.load_runtime_env(value)
        assert SECRET not in str(err.value)
    with pytest.raises(OptionError, match="not environment variable names: A=1"):
        ray_env.check_names(["A=1"])
    with pytest.raises(OptionError, match="not set in this environment: WB_NOT_SET") as err:
        ray_env.forwarded(["WB_SET", "WB_NOT_SET"], {"WB_SET": SECRET})
    assert SECRET not in str(err.value)


def test_worker_runtime_env_keeps_the_users_variables_over_the_harness_own(monkeypatch):
    env = ray_env.worker_runtime_env(
        {"env_vars": {"OMP_NUM_THREADS": "4", "X": "1"}, "pip": ["p"]}, {"OMP_NUM_THREADS": "2", "Y": "2"}
    )
    assert env == {"env_vars": {"OMP_NUM_THREADS": "4", "Y": "2", "X": "1"}, "pip": ["p"]}
    assert ray_env.worker_runtime_env(None, {"Y": "2"}) == {"env_vars": {"Y": "2"}}


def test_ray_env_options_are_for_the_ray_backend():
    with pytest.raises(OptionError, match="for --backend ray"):
        backend_of(RunRequest("x", "m", "d", ray_env=("A",)))
    with pytest.raises(OptionError, match="for --backend ray"):
        backend_of(RunRequest("x", "m", "d", runtime_env="{}", backend="process-pool"))
