"""The ``heavy`` tests: those over :data:`LIMIT_S` seconds each when last measured (on 2 cores), listed in
``tests/heavy.json`` and marked by ``conftest.py``. The quick loop leaves them out:

    python -m pytest -m "not slow and not heavy"

To measure again (after adding slow tests), run the default tier with a JUnit report and rewrite the list:

    python -m pytest -m "not slow" --junitxml=durations.xml && python tests/heavy.py durations.xml
"""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from datetime import date
from pathlib import Path

HERE = Path(__file__).resolve().parent
LIST = HERE / "heavy.json"
LIMIT_S = 3.0


def node_id(classname: str, name: str) -> str:
    """pytest's node id of a JUnit test case (``tests.test_a.TestB`` + ``test_c[x]``)."""
    parts = classname.split(".")
    for cut in range(len(parts), 0, -1):
        path = Path(*parts[:cut]).with_suffix(".py")
        if (HERE.parent / path).exists():
            return "::".join([path.as_posix(), *parts[cut:], name])
    return f"{classname.replace('.', '/')}.py::{name}"


def heavy_tests(junit: Path, limit_s: float = LIMIT_S) -> dict[str, float]:
    """``{node id: seconds}`` of the test cases in a JUnit report that took more than ``limit_s``."""
    cases = ET.parse(junit).getroot().iter("testcase")
    timed = {node_id(c.get("classname", ""), c.get("name", "")): float(c.get("time") or 0) for c in cases}
    return {node: round(seconds, 1) for node, seconds in sorted(timed.items()) if seconds > limit_s}


def listed() -> set[str]:
    """The node ids marked heavy (empty without the list)."""
    return set(json.loads(LIST.read_text())["tests"]) if LIST.exists() else set()


def main(argv: list[str]) -> int:
    tests = heavy_tests(Path(argv[0]))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=HERE)
    record = {
        "measured": f"{date.today().isoformat()} at commit {commit.stdout.strip() or '?'}, 2 cores",
        "limit_s": LIMIT_S,
        "tests": tests,
    }
    LIST.write_text(json.dumps(record, indent=1) + "\n")
    print(f"{len(tests)} tests over {LIMIT_S:g} s written to {LIST}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
