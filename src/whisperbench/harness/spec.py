"""The one way a run's adapter is built: a picklable spec that every backend (in-process, process pool,
Ray actor) and the ``--isolate`` child build from, so ``--refresh``, ``--isolate`` and ``--timeout-s``
mean the same wherever examples run.

>>> from whisperbench.adapters import DecodingOptions
>>> spec = AdapterSpec("recorded", "hyps.jsonl", DecodingOptions(threads=1), refresh=True)
>>> adapter = spec.build()
>>> type(adapter).__name__, adapter.refresh
('RecordedAdapter', True)
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field

from ..adapters import DecodingOptions, get_adapter
from ..adapters.base import Adapter


@dataclass(frozen=True)
class AdapterSpec:
    """Everything needed to build one adapter in any process (picklable): adapter name, model, decoding options,
    refresh, isolation and timeout."""

    adapter: str  # a registered name, or package.module:Class
    model: str
    decoding: DecodingOptions
    refresh: bool = False  # adapters with a result cache bypass it
    isolate: bool = False  # run the adapter in a child process
    timeout_s: float | None = None  # per call; implies a child process
    #: the class, resolved where the run starts (a Ray actor gets it even when only the driver registered it)
    adapter_class: type[Adapter] | None = field(default=None, compare=False, repr=False)

    def __getstate__(self) -> dict:
        """Pickled with its class when the class pickles by reference (a worker then needs no registry entry),
        else by name alone (a class made inside a function is found again by ``module:attribute``)."""
        state = dict(self.__dict__)
        try:
            pickle.dumps(state["adapter_class"])
        except (pickle.PicklingError, AttributeError, TypeError):
            state["adapter_class"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        for key, value in state.items():
            object.__setattr__(self, key, value)

    @classmethod
    def of(cls, request) -> AdapterSpec:
        """The spec of a :class:`~whisperbench.harness.runner.RunRequest`."""
        return cls(
            request.adapter,
            request.model,
            request.decoding,
            request.refresh,
            request.isolate,
            request.timeout_s,
            get_adapter(request.adapter),
        )

    def build(self, isolated: bool = True) -> Adapter:
        """The adapter, not loaded; in a child process when the spec asks for it (unless ``isolated=False``:
        the child itself, or a probe that only reads the adapter's properties)."""
        adapter = (self.adapter_class or get_adapter(self.adapter))(self.model, self.decoding)
        adapter.refresh = self.refresh
        return self.wrap(adapter) if isolated else adapter

    def wrap(self, adapter: Adapter) -> Adapter:
        """``adapter`` as the spec runs it: itself, or in a child process (``isolate``, ``timeout_s``)."""
        if adapter.self_isolating:
            adapter.call_timeout_s = self.timeout_s
            return adapter
        if self.isolate or self.timeout_s is not None:
            from .isolation import IsolatedAdapter

            return IsolatedAdapter(adapter, self.timeout_s, self)
        return adapter


def load_in_child(config: dict) -> Adapter:
    """The ``--isolate`` child's factory: the same spec, built and loaded there (refresh included)."""
    adapter = config["spec"].build(isolated=False)
    adapter.load()
    return adapter
