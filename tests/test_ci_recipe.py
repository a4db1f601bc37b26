"""The documented CI recipes (docs/ci/): the GitHub Actions workflow's shell steps run for real, in order, with
the workflow's env and its `if: always()` rule, on the bundled data; the GitLab job runs the same commands."""

import os
import re
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import jiwer
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
GITHUB = ROOT / "docs" / "ci" / "github-actions.yml"
GITLAB = ROOT / "docs" / "ci" / "gitlab-ci.yml"
INSTALL = "Install whisperbench"  # this test's environment is installed already


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
        done = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=cwd, env=os.environ | env, text=True,
                              capture_output=True, timeout=600)
        results.append((step["name"], done.returncode, done.stdout + done.stderr))
        failed = failed or done.returncode != 0
    return results


def _junit(path: Path, suite: str = "whisperbench-gate") -> ET.Element:
    return ET.parse(path).getroot().find(f"testsuite[@name='{suite}']")


def test_the_github_workflow_gates_for_real_and_caches_the_reference(tmp_path):
    env, steps = _workflow()
    install = next(s for s in steps if s.get("name") == INSTALL)
    assert "whisperbench[local]" in install["run"]
    cached = next(s for s in steps if s.get("uses", "").startswith("actions/cache"))
    assert cached["with"]["path"] == "runs/reference"

    passing = _run_steps(steps, env, tmp_path)  # as configured: QoI 83.3 % (1 of 6 regressed) ≥ 80
    assert [(name, code) for name, code, _ in passing if code != 0] == [], passing
    suite = _junit(tmp_path / "gate-junit.xml")
    assert suite.get("failures") == "0" and int(suite.get("tests")) >= 1
    assert "candidate" in (tmp_path / "gate-report.html").read_text()

    (tmp_path / "gate-report.html").unlink()
    failing = _run_steps(steps, env | {"MIN_QOI": "95"}, tmp_path)  # the next job: the reference comes cached
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
    from whisperbench.store import open_run

    def errors(run):
        return {p.id: (lambda o: o.substitutions + o.deletions + o.insertions)(
            jiwer.process_words(p.reference_norm, p.hypothesis_norm)) for p in open_run(run, runs).predictions}

    reference, candidate = errors("reference"), errors("candidate")
    return sorted(i for i in reference if candidate[i] > reference[i])


def test_the_gitlab_job_runs_the_same_commands():
    env, steps = _workflow()
    job = yaml.safe_load(GITLAB.read_text())["whisper-qoi-gate"]
    assert job["variables"] == env
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
