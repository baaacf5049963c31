"""Contrasts between SIREN's cells (paper Section 3, eq. 72, 75): what a contrast is, how one is written, the
built-in families, and their intervals, pointwise and simultaneous over the family.

* :class:`Contrast` is a pre-specified linear combination sum_c w_c theta_c of (system, budget) cells;
  :func:`parse_contrast` reads ``"[c*]SYSTEM@BUDGET (+|-) ..."``, :func:`contrast_family` builds the families
  ``tuned-vs-default``, ``budget-gains`` (consecutive budgets of one system) and ``pairwise`` (systems at the same
  budget), and :func:`_resolve_contrasts` turns what :func:`assay.siren.evaluate` was given into a list of them.
* :func:`contrast_core` gives their intervals on the core's bootstrap draws (:mod:`assay.siren.array_core`): with
  one multiplier per item shared by every cell, w'G* carries the covariance of cells scored on the same items, so a
  paired comparison is much tighter than two separate intervals. The pointwise interval holds for one contrast
  chosen in advance; the studentized simultaneous one for the whole family at once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, NamedTuple, Sequence

import numpy as np

from ..data import format_budget, parse_budget
from ..errors import AssayInputError
from ..stats import bootstrap as boot
from .array_core import SirenEstimate

CONTRAST_COLUMNS = ("contrast", "kind", "estimate", "se", "ci_low", "ci_high", "simultaneous_low",
                    "simultaneous_high", "verdict_pointwise", "verdict_simultaneous")
CONTRAST_FAMILIES = ("tuned-vs-default", "budget-gains", "pairwise")


@dataclass
class Contrast:
    """A pre-specified linear contrast sum_c w_c theta_c over (system, budget) cells."""

    name: str
    weights: dict[tuple[str, float | str], float]
    kind: str = "custom"


_TERM = re.compile(r"^(?:(?P<coef>[-+]?\d*\.?\d+(?:[eE][-+]?\d+)?)\s*\*\s*)?(?P<cell>.+)$")


def _find_cell(ref: str, cells: Sequence[tuple[str, float | str]], expr: str) -> tuple[str, float | str]:
    if "@" not in ref:
        raise AssayInputError(
            f"contrast {expr!r}: term {ref!r} should be SYSTEM@BUDGET (e.g. 'gpt@1.5M - gpt@0')"
        )
    system, budget_text = ref.rsplit("@", 1)
    system = system.strip()
    budget = parse_budget(budget_text.strip())
    systems = list(dict.fromkeys(s for s, _ in cells))
    if system not in systems:
        raise AssayInputError(
            f"contrast {expr!r}: unknown system {system!r}; systems are: {', '.join(systems)}"
        )
    if (system, budget) not in cells:
        have = ", ".join(format_budget(b) for s, b in cells if s == system)
        raise AssayInputError(
            f"contrast {expr!r}: system {system!r} has no budget {budget_text.strip()!r}; its budgets are: {have}"
        )
    return system, budget


def parse_contrast(expr: str, cells: Sequence[tuple[str, float | str]]) -> Contrast:
    """Parse ``"[c*]SYSTEM@BUDGET (+|-) [c*]SYSTEM@BUDGET ..."``.

    Operators must have spaces around them, so system names may contain ``-``. Budgets accept
    suffixes (``500K``, ``1.5M``); the default is budget ``0``. A cell named twice has its
    coefficients added.

    Parameters
    ----------
    expr : str
        The contrast expression; it becomes the contrast's name.
    cells : sequence of (str, float or str)
        The (system, budget) cells of the table the contrast refers to.

    Returns
    -------
    Contrast
        The contrast, with ``kind="custom"`` and one weight per cell named.

    Raises
    ------
    AssayInputError
        When ``expr`` is empty, a term is not ``SYSTEM@BUDGET``, a system or a budget is not in ``cells``, or
        all weights are zero.

    Examples
    --------
    >>> cells = [("gpt", 0.0), ("gpt", 500000.0), ("llama", 0.0)]
    >>> parse_contrast("gpt@500K - 0.5*llama@0", cells).weights
    {('gpt', 500000.0): 1.0, ('llama', 0.0): -0.5}
    """
    text = expr.strip()
    if not text:
        raise AssayInputError("empty contrast expression")
    sign = 1.0
    if text[0] in "+-" and not re.match(r"^[-+]\d", text):
        sign = -1.0 if text[0] == "-" else 1.0
        text = text[1:].strip()
    parts = re.split(r"\s+([+-])\s+", text)
    signs = [sign] + [(-1.0 if op == "-" else 1.0) for op in parts[1::2]]
    weights: dict[tuple[str, float | str], float] = {}
    for sgn, term in zip(signs, parts[0::2]):
        m = _TERM.match(term.strip())
        coef = float(m.group("coef")) if m and m.group("coef") else 1.0
        cell = _find_cell(m.group("cell").strip() if m else term, cells, expr)
        weights[cell] = weights.get(cell, 0.0) + sgn * coef
    if all(w == 0 for w in weights.values()):
        raise AssayInputError(f"contrast {expr!r} has all weights zero")
    return Contrast(name=expr.strip(), weights=weights)


def _label(cell: tuple[str, float | str]) -> str:
    return f"{cell[0]}@{format_budget(cell[1], compact=True)}"


def _is_default(budget: float | str) -> bool:
    return not isinstance(budget, str) and budget == 0


def contrast_family(kind: str, cells: Sequence[tuple[str, float | str]]) -> list[Contrast]:
    """Build one of the built-in families: tuned vs default, consecutive-budget gains, equal-budget system pairs.

    Parameters
    ----------
    kind : str
        ``"tuned-vs-default"`` (each tuned budget of a system minus its default, budget 0), ``"budget-gains"``
        (each budget of a system minus its previous one, default excluded) or ``"pairwise"`` (each pair of
        systems at a budget both have).
    cells : sequence of (str, float or str)
        The (system, budget) cells of the table, in the order the contrasts follow.

    Returns
    -------
    list of Contrast
        The family's contrasts, each with weights +1 and -1 and ``kind`` set; empty when no cell pair fits.

    Raises
    ------
    AssayInputError
        When ``kind`` is not one of the three families.

    Examples
    --------
    >>> cells = [("gpt", 0.0), ("gpt", 500000.0), ("llama", 0.0), ("llama", 500000.0)]
    >>> [c.name for c in contrast_family("tuned-vs-default", cells)]
    ['gpt@500K - gpt@0', 'llama@500K - llama@0']
    >>> [c.name for c in contrast_family("pairwise", cells)]
    ['gpt@0 - llama@0', 'gpt@500K - llama@500K']
    """
    systems = list(dict.fromkeys(s for s, _ in cells))
    out: list[Contrast] = []
    if kind == "tuned-vs-default":
        for s in systems:
            budgets = [b for t, b in cells if t == s]
            if not any(_is_default(b) for b in budgets):
                continue
            for b in budgets:
                if not _is_default(b):
                    a, d = (s, b), (s, 0.0)
                    out.append(Contrast(f"{_label(a)} - {_label(d)}", {a: 1.0, d: -1.0}, kind))
    elif kind == "budget-gains":
        for s in systems:
            budgets = [b for t, b in cells if t == s and not _is_default(b)]
            for b0, b1 in zip(budgets, budgets[1:]):
                a, c = (s, b1), (s, b0)
                out.append(Contrast(f"{_label(a)} - {_label(c)}", {a: 1.0, c: -1.0}, kind))
    elif kind == "pairwise":
        budgets = list(dict.fromkeys(b for _, b in cells))
        for b in budgets:
            have = [s for s in systems if (s, b) in cells]
            for i, s1 in enumerate(have):
                for s2 in have[i + 1 :]:
                    a, c = (s1, b), (s2, b)
                    out.append(Contrast(f"{_label(a)} - {_label(c)}", {a: 1.0, c: -1.0}, kind))
    else:
        raise AssayInputError(f"unknown contrast family {kind!r}; use one of {', '.join(CONTRAST_FAMILIES)}")
    return out


def _resolve_contrasts(spec: Iterable[Any], cells: Sequence[tuple[str, float | str]],
                       empty: list[str] | None = None) -> list[Contrast]:
    """The contrasts asked for. A family with no member in this table (``pairwise`` with one system) is reported in
    ``empty`` when that list is given and other contrasts remain; it is an error when nothing else was asked."""
    if isinstance(spec, (str, Contrast)):
        spec = [spec]
    spec = list(spec)
    out: list[Contrast] = []
    for item in spec:
        if isinstance(item, Contrast):
            for cell in item.weights:
                if cell not in cells:
                    raise AssayInputError(f"contrast {item.name!r} refers to unknown cell {cell!r}")
            out.append(item)
        elif isinstance(item, str) and item.strip() in CONTRAST_FAMILIES:
            fam = contrast_family(item.strip(), cells)
            if not fam and empty is not None and len(spec) > 1:
                empty.append(item.strip())
                continue
            if not fam:
                raise AssayInputError(
                    f"contrast family {item!r} is empty for this table (e.g. 'tuned-vs-default' needs "
                    "a budget-0 default cell and a tuned budget for the same system)"
                )
            out.extend(fam)
        elif isinstance(item, str):
            out.append(parse_contrast(item, cells))
        elif isinstance(item, Mapping):
            weights = {}
            for ref, w in item.items():
                cell = ref if isinstance(ref, tuple) else _find_cell(str(ref), cells, str(item))
                weights[(cell[0], parse_budget(cell[1]))] = float(w)
            c = Contrast(" + ".join(f"{w:g}*{_label(k)}" for k, w in weights.items()), weights)
            out.append(_resolve_contrasts([c], cells)[0])
        else:
            raise AssayInputError(f"cannot read contrast {item!r}: give an expression string, a family name or a dict")
    return out


class SirenContrasts(NamedTuple):
    """Inference for L linear contrasts W theta over the cells (:func:`contrast_core`).

    Attributes
    ----------
    estimate : (L,) array
        W theta~.
    se : (L,) array
        sqrt(w' Omega_hat w / M), the exact standard deviation of w'G* / sqrt(M) given psi (eq. 75).
    ci_low, ci_high : (L,) arrays
        Pointwise symmetric intervals from the (1 - alpha) quantile of |w'G*|: each valid for one contrast
        chosen in advance.
    simultaneous_low, simultaneous_high : (L,) arrays
        Studentized simultaneous intervals from the quantile of max_l |w_l'G*| / sd_l: valid for all at once.
    critical_simultaneous : float
        That quantile.
    """

    estimate: np.ndarray
    se: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    simultaneous_low: np.ndarray
    simultaneous_high: np.ndarray
    critical_simultaneous: float


def contrast_core(fit: SirenEstimate, W: np.ndarray, *, alpha: float = 0.05) -> SirenContrasts:
    """Pre-specified linear contrasts of the cells, on the same bootstrap draws as the cells (eq. 72, 75).

    Because every cell shares one multiplier per item, w'G* carries the covariance of cells scored on the same
    items, so a paired comparison (tuned vs default, two systems at one budget, two budgets of one system) is
    much tighter than two separate intervals.

    Parameters
    ----------
    fit : SirenEstimate
        The output of :func:`core` (its ``theta``, ``draws``, ``omega`` and ``psi``).
    W : (L, C) array
        One row of cell weights per contrast (e.g. ``[1, -1, 0, ...]`` for cell 0 minus cell 1).
    alpha : float, default 0.05
        Miscoverage of each interval (pointwise) and of the family (simultaneous).
    """
    W = np.atleast_2d(np.asarray(W, dtype=float))
    if W.ndim != 2 or W.shape[1] != len(fit.theta):
        raise AssayInputError(f"W must have one column per cell ({len(fit.theta)}), got shape {W.shape}")
    ci = boot.contrast_inference(fit.theta, W, fit.draws, fit.omega, fit.psi.shape[0], alpha)
    est = ci["estimate"]
    return SirenContrasts(
        estimate=est,
        se=ci["se"],
        ci_low=est - ci["half"],
        ci_high=est + ci["half"],
        simultaneous_low=est - ci["half_simultaneous"],
        simultaneous_high=est + ci["half_simultaneous"],
        critical_simultaneous=float(ci["critical_simultaneous"]),
    )


def _contrast_matrix(contrast_list: Sequence[Contrast], cells: Sequence[tuple[str, float | str]]) -> np.ndarray:
    index = {c: j for j, c in enumerate(cells)}
    W = np.zeros((len(contrast_list), len(cells)))
    for i, con in enumerate(contrast_list):
        for cell, w in con.weights.items():
            W[i, index[cell]] += w
    return W


def _contrasts_table(contrast_list: Sequence[Contrast], con: SirenContrasts) -> dict[str, Any]:
    table: dict[str, Any] = {
        "contrast": [c.name for c in contrast_list],
        "kind": [c.kind for c in contrast_list],
        "estimate": con.estimate,
        "se": con.se,
        "ci_low": con.ci_low,
        "ci_high": con.ci_high,
        "simultaneous_low": con.simultaneous_low,
        "simultaneous_high": con.simultaneous_high,
    }
    # one verdict per interval: the pointwise one answers a single contrast chosen in advance; a reader who
    # scans several contrasts for a finding must use the simultaneous one (it holds for all at once)
    for kind, lo, hi in (("pointwise", "ci_low", "ci_high"), ("simultaneous", "simultaneous_low", "simultaneous_high")):
        table[f"verdict_{kind}"] = np.where(table[lo] > 0, "positive", np.where(table[hi] < 0, "negative", "inconclusive"))
    return table
