"""One seed rule for every public function and for :class:`assay.quickscope.Search`.

A ``seed`` argument may be an int (>= 0), a numpy ``SeedSequence``, a numpy ``Generator`` or ``None``. It is
resolved ONCE, before any work, by :func:`resolve_seed` (or the :func:`seeded` decorator, which does it at the
call boundary), into a :class:`Seed`: the value the result records and the ``SeedSequence`` every random draw of
the call descends from.

* ``int``: recorded as given; ``SeedSequence(int)`` (so ``np.random.default_rng(int)`` and
  ``np.random.default_rng(SeedSequence(int))`` agree).
* ``None``: a fresh 63-bit int drawn from OS entropy, recorded, so the run can be repeated exactly from its result.
* ``SeedSequence``: used as given; recorded when its entropy is an int.
* ``Generator``: the caller owns that stream. The call draws its own ``SeedSequence`` from it (four 64-bit
  words), so its numbers follow the generator's state; the result records ``None`` with
  ``seed_source="generator"``, because a generator's state is not an int. Pass an int to make a run repeatable
  from its result alone.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, NamedTuple, TypeVar

import numpy as np

from .errors import AssayInputError

__all__ = ["Seed", "resolve_seed", "seeded", "spawn"]

F = TypeVar("F", bound=Callable[..., Any])


class Seed(NamedTuple):
    """A resolved seed: ``recorded`` (what results store) and ``sequence`` (what draws descend from).

    Unpacks as ``recorded, sequence = resolve_seed(seed)``."""

    recorded: int | None
    sequence: np.random.SeedSequence

    @property
    def source(self) -> str:
        """``"int"`` when the run can be repeated from ``recorded``; otherwise ``"spawned"`` for a child
        ``SeedSequence`` (a study's per-task seed: repeatable from the study's own recorded seed) or
        ``"generator"`` (drawn from a numpy Generator, or a SeedSequence without an int entropy)."""
        if self.recorded is not None:
            return "int"
        return "spawned" if self.sequence.spawn_key else "generator"

    def rng(self) -> np.random.Generator:
        """A generator on the sequence itself (the same stream as ``np.random.default_rng(recorded)``)."""
        return np.random.default_rng(self.sequence)

    def spawn(self, n: int) -> list[np.random.SeedSequence]:
        """``n`` independent child sequences, in a fixed order."""
        return self.sequence.spawn(n)


def resolve_seed(seed: Any) -> Seed:
    """Resolve ``seed`` (int, SeedSequence, Generator or None) into a :class:`Seed`; see the module docstring.

    Parameters
    ----------
    seed : int, numpy.random.SeedSequence, numpy.random.Generator, Seed or None
        The seed as the caller passed it. A :class:`Seed` is returned unchanged.

    Returns
    -------
    Seed
        ``recorded`` (the int the result stores, or None) and ``sequence`` (the ``SeedSequence`` every draw of the
        call descends from).

    Raises
    ------
    AssayInputError
        When ``seed`` is not one of the types above (a bool included), or is a negative int.

    Examples
    --------
    >>> s = resolve_seed(7)
    >>> s.recorded, s.source
    (7, 'int')
    >>> import numpy as np
    >>> resolve_seed(np.random.default_rng(0)).recorded is None
    True
    """
    if isinstance(seed, Seed):
        return seed
    if seed is None:
        # 63 bits of OS entropy: enough to never collide in practice, and the recorded int fits an int64 column
        # (a DataFrame or a JSON reader in another language keeps it exactly)
        value = int(np.random.SeedSequence().generate_state(1, np.uint64)[0] >> np.uint64(1))
        return Seed(value, np.random.SeedSequence(value))
    if isinstance(seed, np.random.SeedSequence):
        return Seed(int(seed.entropy) if isinstance(seed.entropy, int) and not seed.spawn_key else None, seed)
    if isinstance(seed, np.random.Generator):
        return Seed(None, np.random.SeedSequence(seed.integers(0, 2**63 - 1, size=4).tolist()))
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise AssayInputError(f"seed must be an int (>= 0), a numpy Generator or None, got {seed!r}")
    if seed < 0:
        raise AssayInputError(f"seed must be a non-negative integer, got {seed}")
    return Seed(int(seed), np.random.SeedSequence(int(seed)))


def spawn(seed: Any, n: int) -> list[np.random.SeedSequence]:
    """Return ``n`` independent child seed sequences of ``seed``, in a fixed order.

    Parameters
    ----------
    seed : int, numpy.random.SeedSequence, numpy.random.Generator, Seed or None
        The parent seed, resolved by :func:`resolve_seed`.
    n : int
        Number of children.

    Returns
    -------
    list of numpy.random.SeedSequence
        The ``n`` children.

    Raises
    ------
    AssayInputError
        When :func:`resolve_seed` refuses ``seed``.

    Examples
    --------
    >>> len(spawn(7, 3))
    3
    """
    return resolve_seed(seed).spawn(n)


def seeded(fn: F) -> F:
    """Resolve the ``seed`` argument of ``fn`` once, at the call boundary, before the body runs.

    The body receives a :class:`Seed` (``seed.recorded`` goes into the result, ``seed.sequence`` / ``seed.rng()``
    feed the draws). A bad seed is refused before any work is done.

    Parameters
    ----------
    fn : callable
        A function with a ``seed`` parameter; when the caller omits it, its default (or None) is resolved.

    Returns
    -------
    callable
        A wrapper of ``fn`` (same name and docstring) that calls :func:`resolve_seed` on ``seed`` first.

    Raises
    ------
    TypeError
        When ``fn`` has no ``seed`` parameter.

    Examples
    --------
    >>> @seeded
    ... def draw(n, seed=None):
    ...     return seed.recorded, seed.rng().integers(0, 10, n).shape
    >>> draw(3, seed=5)
    (5, (3,))
    """
    sig = inspect.signature(fn)
    if "seed" not in sig.parameters:  # pragma: no cover - programming error
        raise TypeError(f"{fn.__qualname__} has no 'seed' parameter")
    default = sig.parameters["seed"].default

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        bound = sig.bind_partial(*args, **kwargs)
        value = bound.arguments.get("seed", None if default is inspect.Parameter.empty else default)
        bound.arguments["seed"] = resolve_seed(value)
        return fn(*bound.args, **bound.kwargs)

    return wrapper  # type: ignore[return-value]
