"""One registry pattern for every kind of thing whisperbench can be extended with: adapters, model formats,
metrics, experiment trackers, report documents and commands.

A :class:`Registry` holds named items of one kind from three places, in this order:

1. **built in**: ``builtin()``, usually :func:`package_items` — the ``ATTRIBUTE`` of every module of one package
   (a new built-in item is one new module, nothing else);
2. **installed packages**: the entry-point group ``group`` (``name = "module:OBJECT"``), by entry-point name; an
   entry point that cannot be loaded, or holds something of the wrong kind, is left out with a warning naming it
   (every other command still works), and one whose name is taken is left out the same way;
3. **added at run time**: :meth:`Registry.add` (a test, a notebook, a team's wrapper).

>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Colour:
...     name: str
>>> colours = Registry("colour", builtin=lambda: [Colour("red"), Colour("blue")], kind=Colour)
>>> colours.names(), colours.get("blue")
(['red', 'blue'], Colour(name='blue'))
>>> colours.get("green")
Traceback (most recent call last):
...
whisperbench.errors.WhisperbenchError: unknown colour 'green' (colours: red, blue)
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import pkgutil
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import redirect_stdout
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ..errors import WhisperbenchError

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

logger = logging.getLogger(__name__)

T = TypeVar("T")


def package_items(package: str, attribute: str) -> list[Any]:
    """The ``attribute`` of every module of ``package`` that defines it, modules in name order.

    >>> [m.name for m in package_items("whisperbench.scoring", "METRIC")][:2]
    ['cer', 'formatting']
    """
    found = []
    for info in sorted(pkgutil.iter_modules(importlib.import_module(package).__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{package}.{info.name}")
        if hasattr(module, attribute):
            found.append(getattr(module, attribute))
    return found


def module_item(module: str, attribute: str) -> Any:
    """The ``attribute`` of ``module`` (imported), None where there is no such module or attribute: a registry's
    guess at the one built-in module an item's name points to, without importing the others.

    >>> module_item("whisperbench.scoring.word_error_rate", "METRIC").name, module_item("whisperbench.nothing", "X")
    ('wer', None)
    """
    try:
        found = importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # its package is missing
        found = False
    return getattr(importlib.import_module(module), attribute, None) if found else None


def imported(target: str) -> Any:
    """The object ``target`` names as ``"module:attribute"``, its module imported now: how a registry's item names
    code it loads only when used (a tracker's ``publish``, a backend's class).

    >>> imported("whisperbench.core.registry:imported").__name__
    'imported'
    """
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)


def installed(group: str) -> list[EntryPoint]:
    """The entry points of ``group`` that installed packages declare, by name. Every installed package's
    ``entry_points.txt`` is read once per process (a few hundred files, about 15 ms) for all groups, not once per
    registry; a changed ``sys.path`` (or :meth:`Registry.reload`) reads them again."""
    return sorted(_installed(tuple(sys.path)).select(group=group), key=lambda e: e.name)


@lru_cache(maxsize=2)
def _installed(path: tuple[str, ...]) -> Any:
    from importlib.metadata import entry_points  # imported where a registry first looks for plug-ins

    return entry_points()


def _name(item: Any) -> str:
    return item.name


class Registry(Generic[T]):
    """Named items of one kind: built in, from installed packages, added at run time (see the module).

    ``kind`` (a type, or a predicate) is what every item must be; ``name_of`` its name (``item.name``);
    ``order`` sorts the whole list (default: built in first, then entry points, then added); ``error`` is the
    exception an unknown name raises (its message lists the known names); ``guess`` finds a built-in item by its
    name without loading the others (e.g. :func:`module_item` of the module named after it), None where it cannot;
    ``refuse`` says why an item from elsewhere (a plug-in, one added at run time) may not be what a built-in one
    may be (None: it may), e.g. claim a built-in figure's place.
    """

    def __init__(
        self,
        what: str,
        *,
        builtin: Callable[[], Iterable[T]],
        kind: Any = object,
        group: str | None = None,
        name_of: Callable[[T], str] = _name,
        order: Callable[[T], Any] | None = None,
        error: type[Exception] = WhisperbenchError,
        guess: Callable[[str], T | None] | None = None,
        refuse: Callable[[T], str | None] | None = None,
    ) -> None:
        self.what, self.group, self.error, self._guess = what, group, error, guess
        self._refuse = refuse
        self._builtin, self._kind, self._name_of, self._order = builtin, kind, name_of, order
        self._builtins: dict[str, T] | None = None
        self._loaded: dict[str, T] | None = None
        self._added: dict[str, T] = {}
        self._origins: dict[str, str] = {}

    def _fits(self, item: Any) -> bool:
        return isinstance(item, self._kind) if isinstance(self._kind, type) else bool(self._kind(item))

    def _built_in(self) -> dict[str, T]:
        if self._builtins is None:
            items: dict[str, T] = {}
            for item in self._builtin():
                name = self._name_of(item)
                if name in items:
                    raise ValueError(f"two built-in {self.what}s are called {name!r}")
                items[name] = item
            self._builtins = items
        return self._builtins

    def _load(self) -> dict[str, T]:
        if self._loaded is None:
            items = dict(self._built_in())
            self._loaded = items  # what a plug-in importing whisperbench sees while the plug-ins load: built-ins
            for name, item in self._plugins(set(items)):
                items[name] = item
        return self._loaded

    def _plugins(self, taken: set[str]) -> Iterator[tuple[str, T]]:
        if self.group is None:
            return
        for ep in installed(self.group):
            where = f"{self.what} entry point {ep.name} = {ep.value}"
            try:
                with redirect_stdout(sys.stderr):  # what it prints as it loads never mixes with a command's output
                    item = ep.load()
            except (Exception, SystemExit) as exc:  # a broken plug-in must not stop every command
                logger.warning("%s cannot be loaded (%s: %s): left out", where, type(exc).__name__, exc)
                continue
            if not self._fits(item):
                logger.warning("%s is a %s, not a whisperbench %s: left out", where, type(item).__name__, self.what)
                continue
            refused = self._refuse(item) if self._refuse is not None else None
            if refused:
                logger.warning("%s %s: left out", where, refused)
                continue
            name = self._name_of(item)
            if name in taken:
                logger.warning("%s is called %r, a name already taken: left out", where, name)
                continue
            taken.add(name)
            dist = getattr(ep, "dist", None)
            if dist is not None:
                self._origins[name] = f"{dist.name} {dist.version}"
            yield name, item

    def origin(self, name: str) -> str | None:
        """The distribution (name and version) an installed item ``name`` comes from; None for a built-in item,
        one added at run time or one whose distribution is not known."""
        self._load()
        return self._origins.get(name)

    def items(self) -> tuple[T, ...]:
        """Every item: built in, then installed, then added (or by ``order``)."""
        found = [*self._load().values(), *(v for k, v in self._added.items() if k not in self._load())]
        return tuple(sorted(found, key=self._order) if self._order else found)

    def names(self) -> list[str]:
        """Every item's name, in :meth:`items`' order."""
        return [self._name_of(item) for item in self.items()]

    def find(self, name: str) -> T | None:
        """The item called ``name``, else None (a built-in one without looking for plug-ins: none takes its name;
        where ``guess`` finds it, without importing the other built-in ones either)."""
        if self._builtins is None and self._guess is not None:
            guessed = self._guess(name)
            if guessed is not None and self._fits(guessed) and self._name_of(guessed) == name:
                return guessed
        built_in = self._built_in().get(name)
        return built_in if built_in is not None else self._load().get(name, self._added.get(name))

    def get(self, name: str) -> T:
        """The item called ``name``; ``error`` naming the known ones otherwise."""
        item = self.find(name)
        if item is None:
            raise self.error(f"unknown {self.what} {name!r} ({self.what}s: {', '.join(self.names())})")
        return item

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.find(name) is not None

    def add(self, item: T) -> T:
        """Add (or replace) an item at run time (usable as a decorator); a built-in or installed item's name is
        refused: the new one needs its own."""
        if not self._fits(item):
            raise TypeError(f"{item!r} is not a whisperbench {self.what}")
        name, loaded = self._name_of(item), self._load()
        refused = self._refuse(item) if self._refuse is not None else None
        if refused:
            raise self.error(f"{self.what} {name!r} {refused}")
        if name in loaded:
            raise self.error(f"{self.what} {name!r} is built in or installed; one added at run time needs a new name")
        self._added[name] = item
        return item

    def remove(self, name: str) -> None:
        """Remove an item :meth:`add` added (nothing when it is not there)."""
        self._added.pop(name, None)

    def reload(self) -> None:
        """Look for built-in and installed items again on the next read (after installing a package)."""
        self._builtins = self._loaded = None
        self._origins = {}
        _installed.cache_clear()
