"""Any adapter in a child process (:mod:`whisperbench.process.child`): a crash or a hang fails one example,
never the run.

:class:`IsolatedAdapter` wraps any registered adapter this way (``whisperbench run --isolate``);
``--timeout-s`` bounds each call, so a hung native call is killed and its example recorded as failed.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from ..adapters.base import Adapter
from ..errors import ModelError
from ..process.child import ChildProcess, RemoteError, WorkerCrashed
from ..types import Example, Transcript

# --- any adapter in a child process ------------------------------------------------------------------


class IsolatedAdapter(Adapter):
    """Another adapter, run in a child process that is replaced after a crash or a timeout."""

    cpu_in_process = False  # the model computes in the child process, which reports its CPU seconds

    name = "isolated"  # not registered: built by the runner around the requested adapter
    uses_weights = False

    def __init__(self, inner: Adapter, timeout_s: float | None, spec: Any):
        """``spec``: the :class:`~whisperbench.harness.spec.AdapterSpec` the child builds ``inner`` from."""
        cls = type(inner)  # the child imports it by path, so entry-point and test adapters work too
        self.spec = replace(
            spec, adapter=f"{cls.__module__}:{cls.__qualname__}", isolate=False, timeout_s=None, adapter_class=None
        )
        # the inner adapter's class settings, mirrored per instance (one IsolatedAdapter class wraps them all)
        self.inner, self.timeout_s, self.name = inner, timeout_s, inner.name  # type: ignore[misc]
        self.model, self.decoding, self.settings = inner.model, inner.decoding, inner.settings
        self.needs_audio, self.long_form_algorithm = inner.needs_audio, inner.long_form_algorithm  # type: ignore[misc]
        self.native_long_form = inner.native_long_form  # type: ignore[misc]
        self.native_seams = inner.native_seams  # type: ignore[misc]
        self._child: ChildProcess | None = None
        self._logs: Path | None = None
        self._restarts, self._peak_rss_mb, self._inner_info = 0, 0.0, None

    @property
    def batch_size(self) -> int:
        return self.inner.batch_size

    def load(self) -> None:
        self._logs = Path(tempfile.mkdtemp(prefix="whisperbench-isolated-"))
        self._start()

    def _start(self) -> None:
        config = {"spec": self.spec}
        assert self._logs is not None
        try:
            self._child = ChildProcess(
                "whisperbench.harness.spec:load_in_child",
                config,
                self._logs / f"child-{self._restarts}.log",
                label=f"{self.inner.name} worker",
            )
        except RemoteError as exc:
            raise ModelError(f"adapter {self.inner.name} could not load {self.model} in its worker: {exc}") from None

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        if self._child is None:  # the last restart failed: try again
            self._start()
        assert self._child is not None
        try:
            return self._child.call(method, *args, timeout_s=self.timeout_s, **kwargs)
        except WorkerCrashed as crash:
            self._peak_rss_mb = max(self._peak_rss_mb, self._child.peak_rss_mb)
            self._child, self._restarts = None, self._restarts + 1
            try:
                self._start()
                note = "a new worker was started for the next example"
            except Exception as exc:  # reported again by the next call
                note = f"restarting the worker failed: {exc}"
            raise type(crash)(f"{crash}; {note}") from None  # a timeout stays a timeout (never retried)

    def transcribe(self, audio: np.ndarray | None, example: Example, *, long_form: bool) -> Transcript:
        return self._with_cpu([self._call("transcribe", audio, example, long_form=long_form)], [1.0])[0]

    def transcribe_batch(
        self, audios: list[np.ndarray], examples: list[Example], *, timestamps: bool = False
    ) -> list[Transcript]:
        out = self._call("transcribe_batch", audios, examples, timestamps=timestamps)
        return self._with_cpu(out, [float(len(audio)) for audio in audios])

    def _with_cpu(self, transcripts: list[Transcript], weights: list[float]) -> list[Transcript]:
        """The child's CPU seconds of the call (all its threads), shared by audio length, on transcripts that do
        not say their own — when the inner implementation computes in that process."""
        cpu = self._child.last_cpu_s if self._child is not None and self.inner.cpu_in_process else None
        total = sum(weights)
        if cpu is not None and len(transcripts) == len(weights):
            for transcript, weight in zip(transcripts, weights):
                if transcript.cpu_s is None:
                    transcript.cpu_s = cpu * (weight / total if total > 0 else 1.0 / len(weights))
        return transcripts

    def describe(self) -> dict[str, Any]:
        try:
            info = dict(self._call("describe")) if self._logs else self.inner.describe()
        except (WorkerCrashed, RemoteError, ModelError):
            info = self.inner.describe()
        peak = max(self._peak_rss_mb, self._child.peak_rss_mb if self._child else 0.0)
        info.update(
            isolated=True,
            timeout_s=self.timeout_s,
            worker_restarts=self._restarts,
            worker_peak_rss_mb=max(peak, info.get("worker_peak_rss_mb") or 0.0),
        )
        return info

    def close(self) -> None:
        if self._child is not None:
            self._child.stop()
            self._child = None
        if self._logs:
            shutil.rmtree(self._logs, ignore_errors=True)
