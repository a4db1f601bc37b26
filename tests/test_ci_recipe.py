"""The documented CI recipes (docs/ci/): the GitHub Actions workflow's shell steps run for real, in order, with
the workflow's env and its `if: always()` rule, on the bundled data; the GitLab job runs the same commands."""

import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import jiwer
import pytest
import yaml

from .conftest import BUNDLED, needs_adapter, read_manifest_rows, write_jsonl

ROOT = Path(__file__).resolve().parents[1]
GITHUB = ROOT / "docs" / "ci" / "github-actions.yml"
GITLAB = ROOT / "docs" / "ci" / "gitlab-ci.yml"
INSTALL = "Install whisperbench"  # this test's environment is installed already
#: the steps' `whisperbench` imports this checkout's package, whatever the working folder
_THIS_CHECKOUT = {"PYTHONPATH": str(Path(__import__("whisperbench").__file__).resolve().parents[1])}


def _workflow() -> tuple[dict, list[dict]]:
    workflow = yaml.safe_load(GITHUB.read_text())
    (job,) = workflow["jobs"].values()
    return workflow["env"], job["steps"]


def _run_steps(steps: list[dict], env: dict, cwd: Path) -> list[tuple[str, int, str]]:
    """Each `run:` step as GitHub runs it: bash -e, stop running plain steps after the first failure."""
    results, failed = [], False
    for step in steps:
        if "run" not in step or step.get("name") == INSTALL:
            continue
        if failed and step.get("if") != "always()":
            continue
        done = subprocess.run(
            ["bash", "-e", "-c", step["run"]],
            cwd=cwd,
            # the job's steps find `whisperbench` where this Python's scripts are (an activated venv, or not)
            env=os.environ
            | _THIS_CHECKOUT
            | env
            | {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"},
            text=True,
            capture_output=True,
            timeout=600,
        )
        results.append((step["name"], done.returncode, done.stdout + done.stderr))
        failed = failed or done.returncode != 0
    return results


def _junit(path: Path, suite: str = "whisperbench-gate") -> ET.Element:
    return ET.parse(path).getroot().find(f"testsuite[@name='{suite}']")


def _cut_in_half(tmp_path: Path) -> Path:
    """Recorded hypotheses keeping the first half of each transcript's words: a candidate that regresses on
    every machine (an int8 model's QoI depends on the CPU's instructions: 83 % with AVX-512, 100 % without)."""
    rows = read_manifest_rows(BUNDLED / "shortform" / "manifest.jsonl")
    return write_jsonl(
        tmp_path / "halves.jsonl",
        [{"id": r["id"], "hypothesis": " ".join(r["text"].split()[: len(r["text"].split()) // 2])} for r in rows],
    )


def test_the_github_workflow_gates_for_real_and_caches_the_reference(tmp_path):
    needs_adapter("openai-whisper", "tiny.en")
    needs_adapter("faster-whisper", "tiny.en")
    env, steps = _workflow()
    install = next(s for s in steps if s.get("name") == INSTALL)
    assert "whisperbench[local]" in install["run"]
    cached = next(s for s in steps if s.get("uses", "").startswith("actions/cache"))
    assert cached["with"]["path"] == "runs/reference"

    passing = _run_steps(steps, env, tmp_path)  # as configured: QoI 83.3 % or 100 % (by the CPU) ≥ 80
    assert [(name, code) for name, code, _ in passing if code != 0] == [], passing
    suite = _junit(tmp_path / "gate-junit.xml")
    assert suite.get("failures") == "0" and int(suite.get("tests")) >= 1
    assert "candidate" in (tmp_path / "gate-report.html").read_text()

    (tmp_path / "gate-report.html").unlink()
    # the next job: the reference comes from the cache, the candidate is computed afresh (a worse one)
    shutil.rmtree(tmp_path / "runs" / "candidate")
    worse = {"CANDIDATE_ADAPTER": "recorded", "CANDIDATE_MODEL": str(_cut_in_half(tmp_path)), "CANDIDATE_OPTIONS": ""}
    failing = _run_steps(steps, env | worse, tmp_path)
    codes = {name: code for name, code, _ in failing}
    reference_log = next(log for name, _, log in failing if name.startswith("Reference run"))
    assert re.search(r"0 computed, 6 resumed", reference_log), reference_log
    gate = next(name for name in codes if name == "QoI gate")
    assert codes[gate] == 1  # regression: the job fails
    assert codes["HTML report"] == 0 and (tmp_path / "gate-report.html").exists()  # if: always()
    assert _junit(tmp_path / "gate-junit.xml").find("testcase[@name='QoI']/failure") is not None
    examples = _junit(tmp_path / "gate-junit.xml", "whisperbench-examples")
    failed_cases = sorted(case.get("name") for case in examples if case.find("failure") is not None)
    assert failed_cases == _regressed_by_jiwer(tmp_path / "runs") != []


def _regressed_by_jiwer(runs: Path) -> list[str]:
    """Examples where the candidate makes more word errors than the reference, counted by jiwer directly."""
    from whisperbench.store.runs import open_run

    def errors(run):
        return {
            p.id: (lambda o: o.substitutions + o.deletions + o.insertions)(
                jiwer.process_words(p.scored().transcript_norm, p.scored().hypothesis_norm)
            )
            for p in open_run(run, runs).scored()
        }

    reference, candidate = errors("reference"), errors("candidate")
    return sorted(i for i in reference if candidate[i] > reference[i])


def test_the_gitlab_job_runs_the_same_commands():
    env, steps = _workflow()
    job = yaml.safe_load(GITLAB.read_text())["whisper-qoi-gate"]
    same = {k: v for k, v in job["variables"].items() if k != "WHISPERBENCH_SOURCE"}  # each CI's checkout folder
    assert same == {k: v for k, v in env.items() if k != "WHISPERBENCH_SOURCE"}
    assert env["WHISPERBENCH_SOURCE"] == "file://${{ github.workspace }}"
    # no variable a shell sets itself (COLUMNS held the column flags; bash resets it to the terminal's width)
    assert not set(env) & {"COLUMNS", "LINES", "PWD", "OLDPWD", "HOME", "PATH", "SECONDS", "RANDOM", "IFS"}
    assert job["variables"]["WHISPERBENCH_SOURCE"] == "file://$CI_PROJECT_DIR"
    github = [s["run"] for s in steps if "run" in s and s.get("name") != INSTALL]
    install = next(s["run"] for s in steps if s.get("name") == INSTALL)
    assert job["before_script"] == [install]
    assert job["script"] + job["after_script"] == github
    assert job["artifacts"]["reports"]["junit"] == "gate-junit.xml" and job["artifacts"]["when"] == "always"
    assert job["cache"]["paths"] == ["runs/reference"]


@pytest.mark.parametrize("recipe", [GITHUB, GITLAB])
def test_the_readme_shows_the_recipes_as_they_are(recipe):
    readme = (ROOT / "README.md").read_text()
    assert f"docs/ci/{recipe.name}" in readme
