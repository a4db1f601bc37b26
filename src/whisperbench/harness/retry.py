"""The one retry policy: how many times an example is tried when the process transcribing it dies.

A worker that dies (a native crash, a process killed by the system, a lost Ray node) may have died of its
example or of something else, so the example is tried again, alone, until it has been tried
``RetryPolicy.attempts`` times; then it is stored as failed, saying so (`RetryPolicy.gave_up`). What is
*not* retried: a Python exception raised by the adapter (it tells what is wrong with the example, and would
say it again), and a call killed for exceeding ``--timeout-s`` (it already had its time; another try would
double the wait).

Every backend applies this one policy, so WER and QoI never depend on where examples ran:

- in-process and process-pool workers with ``--isolate`` / ``--timeout-s``: `ExampleRunner` retries a call
  whose child process died (`WorkerCrashed`);
- process pool without isolation: a worker's death breaks the pool; the examples it had in flight are tried
  again one at a time in a new pool (`backends._PoolState`);
- Ray: an actor's death; its examples are tried again alone on another actor (`ray_backend.RayBackend`).

(In-process without ``--isolate`` a crash ends the whole run: nothing is left to retry in; the resume
starts again.) The policy is recorded in run.json (``execution.retry``), and a prediction that needed
more than one try carries ``extra.attempts``.

>>> policy = RetryPolicy(attempts=2)
>>> policy.again(1), policy.again(2)
(True, False)
>>> print(policy.gave_up(2, "killed by SIGABRT"))
the worker process died while transcribing this example on each of its 2 attempts (last: killed by SIGABRT)
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import OptionError
from ..process.child import WorkerCrashed, WorkerTimeout
from .choices import DEFAULT_ATTEMPTS

#: tries per example when its worker dies, unless the run asks for another number (``--attempts``)


@dataclass(frozen=True)
class RetryPolicy:
    """How many times in all an example is tried when the process transcribing it dies (at least 1)."""

    attempts: int = DEFAULT_ATTEMPTS

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise OptionError(f"attempts {self.attempts}: an example is tried at least once")

    def again(self, tries: int) -> bool:
        """Whether an example whose worker died on its ``tries``-th try is tried once more."""
        return tries < self.attempts

    @staticmethod
    def retried(exc: BaseException) -> bool:
        """Whether ``exc`` (raised by an isolated adapter's call) is a worker's death this policy retries."""
        return isinstance(exc, WorkerCrashed) and not isinstance(exc, WorkerTimeout)

    def gave_up(self, tries: int, cause: str) -> str:
        """The error stored for an example whose worker died on every one of its ``tries``."""
        each = f"on each of its {tries} attempts" if tries > 1 else "on its only attempt"
        return f"the worker process died while transcribing this example {each} (last: {cause})"

    def to_json(self) -> dict:
        """What run.json records (``execution.retry``)."""
        return {"attempts": self.attempts, "retried": "worker process deaths (not adapter errors, not timeouts)"}
