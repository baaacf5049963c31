"""Question generators for dynamic benchmarks (QuickScope): the protocol, the registry and the shipped generators.

A generator turns a configuration (a template identifier: a dict of parameter values from a
:class:`~assay.quickscope.SearchSpace`) and a random generator into one concrete question::

    gen = get_generator("dyval")
    inst = gen.generate({"dataset_type": "arithmetic", "depth": 3, ...}, np.random.default_rng(0))
    inst.question, inst.reference, inst.metadata
    gen.score("... \\boxed{42}", inst)        # 1.0 correct, 0.0 wrong, None unparseable

Protocol (duck-typed; :class:`Generator` documents it):

* ``name``: registry name;
* ``space()``: the default :class:`~assay.quickscope.SearchSpace` of templates;
* ``generate(config, rng) -> Instance``: must be a pure function of ``(config, rng)`` (same seed, same question);
* ``score(text, instance) -> float | None``: correctness of a model's answer in [0, 1], ``None`` when no answer
  can be extracted (the utility decides what an unparseable answer counts as);
* ``complexity(config) -> float`` (optional): the template's structural complexity, used by the
  complexity-weighted error utility.

Shipped: ``dyval`` (DyVal-style DAG reasoning written here from the DyVal paper's description; the 4,440-template
space of QuickScope App. C) and, with the optional ``reasoning-gym`` extra, ``reasoning_gym:<task>`` for any
reasoning-gym task and ``grid`` (shortest_path + largest_island, QuickScope's Grid Reasoning).

:mod:`.worlds` holds simulated worlds (a space and a known error rate per template) for validating QuickScope
without an LLM: ``assay.benchmarks.worlds.get_world("dyval-ceiling")``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol

import numpy as np

from ..errors import AssayInputError

__all__ = ["Instance", "Generator", "register_generator", "get_generator", "generator_names", "worlds"]


def __getattr__(name: str) -> Any:
    # the submodules load on first use (``assay.benchmarks.worlds`` after ``import assay``)
    if name in ("worlds", "dyval", "reasoning_gym"):
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass
class Instance:
    """One generated question: the prompt text, the reference answer, and metadata the scorer may need."""

    question: str
    reference: Any
    metadata: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"question": self.question, "reference": self.reference, "metadata": self.metadata}


class Generator(Protocol):
    """What QuickScope needs from a benchmark (see the module docstring)."""

    name: str

    def space(self): ...

    def generate(self, config: Mapping[str, Any], rng: np.random.Generator) -> Instance: ...

    def score(self, text: str | None, instance: Instance) -> float | None: ...


_REGISTRY: dict[str, Callable[..., Any]] = {}


def register_generator(name: str) -> Callable:
    """Decorator registering a generator factory under ``name``.

    A prefix ``name:`` passes the rest as ``task`` (see :func:`get_generator`).

    Parameters
    ----------
    name : str
        The registry name.

    Returns
    -------
    Callable
        A decorator that records the factory it is applied to under ``name`` and returns it unchanged.
    """

    def deco(factory):
        _REGISTRY[name] = factory
        return factory

    return deco


def _load_builtin() -> None:
    from . import dyval  # noqa: F401
    try:
        from . import reasoning_gym  # noqa: F401
    except ImportError:  # pragma: no cover - module itself has no hard dependency
        pass


def generator_names() -> list[str]:
    """The names of the registered generators, sorted (the shipped ones are loaded first).

    Returns
    -------
    list of str
        The registry names, e.g. ``"dyval"``, ``"grid"``, ``"reasoning_gym"``.

    Examples
    --------
    >>> [name for name in generator_names() if name in ("dyval", "grid", "reasoning_gym")]  # the built-in ones
    ['dyval', 'grid', 'reasoning_gym']
    """
    _load_builtin()
    return sorted(_REGISTRY)


def get_generator(name: str, **kwargs: Any):
    """The generator registered as ``name``.

    ``"reasoning_gym:shortest_path"`` passes ``task="shortest_path"``.

    Parameters
    ----------
    name : str
        A registry name, optionally followed by ``:task``.
    **kwargs : Any
        Passed to the generator's factory.

    Returns
    -------
    Generator
        The generator the factory builds.

    Raises
    ------
    AssayInputError
        If ``name`` is not a non-empty string or no generator is registered under it.
    """
    _load_builtin()
    if not isinstance(name, str) or not name:
        raise AssayInputError(f"generator must be a name; got {name!r}")
    base, _, task = name.partition(":")
    if base not in _REGISTRY:
        raise AssayInputError(f"unknown generator {name!r}; available: {', '.join(sorted(_REGISTRY))}")
    if task:
        kwargs["task"] = task
    return _REGISTRY[base](**kwargs)
