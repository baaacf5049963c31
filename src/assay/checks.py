"""One vocabulary of input checks, shared by ``stats/``, every method, the campaign file and the command line.

Each check takes the value and the name the user knows it by, and returns the value cleaned (a plain ``float`` or
``int``) or raises :class:`~assay.errors.AssayInputError` saying what is accepted and what was given. A rule lives here
once: an error level is a number strictly between 0 and 1 everywhere, and a budget (a fraction of a bank or a count)
resolves to the same number of questions whichever method or campaign section asks.

>>> from assay.checks import level, fraction_or_count
>>> level(0.05)
0.05
>>> fraction_or_count(0.05, 200)
(10, None)
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any

from .errors import AssayInputError

__all__ = ["number", "level", "positive_int", "budget", "fraction_or_count", "bounds"]


def _is_real(v: Any) -> bool:
    # bool is an int in Python, never a number here; numpy scalars are numbers.Real
    return isinstance(v, Real) and not isinstance(v, bool) and type(v).__name__ != "bool_"


def number(value: Any, name: str, *, low: float | None = None, high: float | None = None, low_open: bool = False,
           high_open: bool = False) -> float:
    """Check a finite real number, optionally within ``[low, high]``.

    The value must be a real number (an int, a float or a numpy scalar; not a bool) that is finite. When ``low`` or
    ``high`` is given it must also lie within the range, each end open when asked.

    Parameters
    ----------
    value : Any
        The value to check.
    name : str
        The name the user knows the value by, used in the error message.
    low : float or None, optional
        The smallest accepted value; None (the default) for no lower end.
    high : float or None, optional
        The largest accepted value; None (the default) for no upper end.
    low_open : bool, optional
        When True, ``low`` itself is refused (the range is open at the low end). Default False.
    high_open : bool, optional
        When True, ``high`` itself is refused (the range is open at the high end). Default False.

    Returns
    -------
    float
        The value as a plain ``float``.

    Raises
    ------
    AssayInputError
        When the value is not a finite real number or lies outside the range.

    Examples
    --------
    >>> number(2, "temperature", low=0, high=2)
    2.0
    >>> number(0, "temperature", low=0, low_open=True)
    Traceback (most recent call last):
    ...
    assay.errors.AssayInputError: temperature must be a number > 0; got 0
    """
    if not _is_real(value) or not math.isfinite(float(value)):
        raise AssayInputError(f"{name} must be a finite number{_range(low, high, low_open, high_open)}; got {value!r}")
    v = float(value)
    if (low is not None and (v < low or (low_open and v == low))) or \
            (high is not None and (v > high or (high_open and v == high))):
        raise AssayInputError(f"{name} must be a number{_range(low, high, low_open, high_open)}; got {value!r}")
    return v


def _range(low: float | None, high: float | None, low_open: bool, high_open: bool) -> str:
    if low is None and high is None:
        return ""
    if high is None:
        return f" {'>' if low_open else '>='} {low:g}"
    if low is None:
        return f" {'<' if high_open else '<='} {high:g}"
    return f" in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"


def level(value: Any, name: str = "delta") -> float:
    """An error level (delta, alpha), a confidence or a quantile target: a number strictly between 0 and 1.

    Parameters
    ----------
    value : Any
        The value to check.
    name : str, default "delta"
        Its name, for the error message.

    Returns
    -------
    float
        ``value`` as a float.

    Raises
    ------
    AssayInputError
        If ``value`` is not a real number strictly between 0 and 1 (NaN included).

    Examples
    --------
    >>> level(1.0)
    Traceback (most recent call last):
    ...
    assay.errors.AssayInputError: delta must be a number strictly between 0 and 1; got 1.0
    """
    if not _is_real(value) or not 0.0 < float(value) < 1.0:  # NaN fails both comparisons
        raise AssayInputError(f"{name} must be a number strictly between 0 and 1; got {value!r}")
    return float(value)


def positive_int(value: Any, name: str, *, minimum: int = 1) -> int:
    """Check a whole number >= ``minimum``.

    An int or a numpy integer is accepted; a bool or a float is not.

    Parameters
    ----------
    value : Any
        The value to check.
    name : str
        The name the user knows the value by, used in the error message.
    minimum : int, optional
        The smallest accepted value. Default 1.

    Returns
    -------
    int
        The value as a plain ``int``.

    Raises
    ------
    AssayInputError
        When the value is not a whole number, or is below ``minimum``.

    Examples
    --------
    >>> positive_int(3, "splits", minimum=2)
    3
    """
    if isinstance(value, bool) or not isinstance(value, Integral) or int(value) < minimum:
        raise AssayInputError(f"{name} must be a whole number >= {minimum}; got {value!r}")
    return int(value)


def budget(value: Any, name: str = "budget", *, minimum: int = 2) -> float | int:
    """Check the form of a budget, before the bank's size is known.

    A budget is a fraction in (0, 1] (a float) or a whole number of questions >= ``minimum`` (an int, or an integral
    float above 1). It is returned as given; :func:`fraction_or_count` turns it into a number of questions once the
    bank's size is known.

    Parameters
    ----------
    value : Any
        The budget to check.
    name : str, optional
        The name the user knows the value by, used in the error message. Default ``"budget"``.
    minimum : int, optional
        The smallest accepted number of questions. Default 2.

    Returns
    -------
    float or int
        The budget, as given.

    Raises
    ------
    AssayInputError
        When the value is neither a fraction in (0, 1] nor a whole number of questions >= ``minimum``.

    Examples
    --------
    >>> budget(0.25), budget(40)
    (0.25, 40)
    """
    if not _is_real(value) or not math.isfinite(float(value)) or value <= 0:
        raise AssayInputError(f"{name} must be a fraction of the bank in (0, 1] or a number of questions >= "
                              f"{minimum}; got {value!r}")
    if isinstance(value, Integral) or float(value) > 1:
        if float(value) != int(value):
            raise AssayInputError(f"{name} {value!r} is neither a fraction in (0, 1] nor a whole number of questions")
        if int(value) < minimum:
            hint = " (for the whole bank write 1.0)" if int(value) == 1 else ""
            raise AssayInputError(f"{name} must be at least {minimum} questions (the variance needs {minimum}); got "
                                  f"{value!r}{hint}")
    return value


def fraction_or_count(value: Any, N: int, name: str = "budget", *, minimum: int = 2) -> tuple[int, str | None]:
    """Resolve a budget over a bank of ``N`` questions to a number of questions.

    A float in (0, 1] is a fraction of the bank (``1.0``: every question; the count is rounded down); an integer, or
    an integral float above 1, is a count (:func:`budget`). Fewer than ``minimum`` questions is refused (an interval
    needs a variance, so two at least), naming the smallest fraction that would do; a count above ``N`` means every
    question, once.

    Parameters
    ----------
    value : Any
        The budget: a fraction of the bank in (0, 1] or a number of questions.
    N : int
        The number of questions in the bank.
    name : str, optional
        The name the user knows the value by, used in messages. Default ``"budget"``.
    minimum : int, optional
        The smallest accepted number of questions. Default 2.

    Returns
    -------
    tuple of (int, str or None)
        ``(n, note)``: how many questions (at most ``N``), and a note for the user when the budget reaches the whole
        bank (None otherwise).

    Raises
    ------
    AssayInputError
        When the budget is malformed (:func:`budget`) or resolves to fewer than ``minimum`` questions.

    Examples
    --------
    >>> fraction_or_count(0.05, 200)
    (10, None)
    >>> fraction_or_count(999, 200)
    (200, 'budget 999 is more than the 200 questions in the bank: every question is asked once')
    """
    value = budget(value, name, minimum=minimum)
    if N < minimum:
        raise AssayInputError(f"{name}: the bank holds {N} question(s); at least {minimum} are needed")
    if not isinstance(value, Integral) and float(value) <= 1:
        n = N if float(value) == 1 else int(math.floor(float(value) * N + 1e-9))
        if n < minimum:
            raise AssayInputError(f"{name} {float(value):g} of {N} questions is {n}; at least {minimum} are needed "
                                  f"(use at least {minimum / N:.2g} or a count)")
    else:
        n = int(value)
    if n > N:
        return N, f"{name} {n} is more than the {N} questions in the bank: every question is asked once"
    if n == N:
        return N, f"{name} covers the whole bank ({N} questions): every question is asked once"
    return n, None


def bounds(low: Any, high: Any, name: str = "bounds") -> tuple[float, float]:
    """Check the range ``[low, high]`` of a bounded score.

    Both ends must be finite numbers (:func:`number`), and ``low < high``.

    Parameters
    ----------
    low : Any
        The lowest possible score.
    high : Any
        The highest possible score.
    name : str, optional
        The name the user knows the range by, used in the error message. Default ``"bounds"``.

    Returns
    -------
    tuple of (float, float)
        ``(low, high)`` as plain floats.

    Raises
    ------
    AssayInputError
        When an end is not a finite number, or ``low >= high``.

    Examples
    --------
    >>> bounds(0, 10)
    (0.0, 10.0)
    """
    lo, hi = number(low, f"{name} (low)"), number(high, f"{name} (high)")
    if not lo < hi:
        raise AssayInputError(f"{name} must have low < high; got [{lo:g}, {hi:g}]")
    return lo, hi
