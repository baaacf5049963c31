"""False coverage rate control in PS-DME: the per-band level of each method, the e-value calibrator behind
PS-DME's, and the choice of the narrowest valid method (paper Sec. 3, eq. 11-17, Theorem 1, Lemma 2).

:func:`levels` gives the miscoverage alpha at which each selected band is built: delta for ``naive`` and ``ss-dme``
(eq. 11), delta / K for ``bonferroni``, and for ``ps-dme`` the e-BY level alpha = f^{-1}(K / (delta |S|)) (eq. 14)
of a p-to-e calibrator f, by default the power calibrator (eq. 12) at its optimal tau (eq. 17).
:func:`narrowest_method` compares the resulting DKW half-widths (Lemma 2, eq. 15) for ``method="auto"``.

Theorem 1 needs the calibrator fixed before the data. Choosing the optimal tau from |S| is therefore done only
when |S| is fixed by the rule itself ("all", "top:K"). For a rule whose |S| depends on the data ("below:VALUE",
a callable) the "optimal" calibrator takes its tau from K and a DECLARED maximum selection size
``max_selected`` (default K), fixed before any KPI is seen; the level then follows the realised |S| through that
fixed calibrator (alpha = f_tau^{-1}(K / (delta |S|))), which Theorem 1 covers. (An earlier version tuned tau on
the realised |S| of a data-dependent rule and still printed "for any selection rule".) :func:`_fix_calibrator`
does this fixing.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import AssayInputError
from ..stats import calibrate as cal
from .arguments import _is_number
from .selection import _fixed_size


def levels(K: int, selected: int, delta: float, calibrator: Any = "optimal") -> dict[str, float]:
    """Per-band miscoverage alpha of each method, from the design (K, |S|, delta) and the calibrator only.

    ``naive`` and ``ss-dme``: delta (eq. 11); ``bonferroni``: delta / K; ``ps-dme``: alpha = f^{-1}(K / (delta |S|))
    (eq. 14), with the power calibrator f_tau (eq. 12) at its optimal tau (eq. 17; alpha = exp(W_{-1}(-delta |S| /
    (e K)))) for ``"optimal"``, at a given tau for a number, or the numerical generalised inverse of a calibrator
    function. NaN for ps-dme when |S| = 0.

    Parameters
    ----------
    K : int
        Number of configurations (>= 1).
    selected : int
        Number |S| of selected configurations (0 <= |S| <= K).
    delta : float
        Target false coverage rate, strictly between 0 and 1.
    calibrator : "optimal", float or callable, default "optimal"
        PS-DME's p-to-e calibrator: ``"optimal"`` (or None) for the power calibrator at its optimal tau, a tau in
        (0, 1) for the power calibrator at that tau, or a calibrator function f.

    Returns
    -------
    dict of str to float
        The per-band alpha of ``"naive"``, ``"ss-dme"``, ``"bonferroni"`` and ``"ps-dme"``.

    Raises
    ------
    AssayInputError
        If K or ``selected`` is not an integer in range, ``selected`` exceeds K, ``delta`` is not in (0, 1), a
        numeric tau is not in (0, 1), or ``calibrator`` is none of the accepted kinds.

    Examples
    --------
    >>> {k: round(v, 4) for k, v in levels(10, 2, 0.1).items()}
    {'naive': 0.1, 'ss-dme': 0.1, 'bonferroni': 0.01, 'ps-dme': 0.0011}
    """
    for name, v, lo in (("K", K, 1), ("selected", selected, 0)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
            raise AssayInputError(f"{name} must be an integer >= {lo} (configurations); got {v!r}")
    if selected > K:
        raise AssayInputError(f"selected ({selected}) cannot exceed K ({K})")
    if not _is_number(delta) or not 0 < delta < 1:
        raise AssayInputError(f"delta must be a number strictly between 0 and 1; got {delta!r}")
    if _is_number(calibrator) and not 0 < float(calibrator) < 1:
        raise AssayInputError(f"a calibrator tau must be in (0, 1); got {calibrator!r}")
    out = {"naive": delta, "ss-dme": delta, "bonferroni": delta / K}
    if selected == 0:
        out["ps-dme"] = float("nan")
    elif calibrator in (None, "optimal"):
        out["ps-dme"] = cal.optimal_power_level(K, selected, delta)
    elif isinstance(calibrator, (int, float)) and not isinstance(calibrator, bool):
        out["ps-dme"] = cal.power_level(K, selected, delta, float(calibrator))
    elif callable(calibrator):
        out["ps-dme"] = float(cal.generalized_inverse(calibrator, K / (delta * selected)))
    else:
        raise AssayInputError(f"calibrator must be 'optimal', a tau in (0, 1) or a calibrator function, got {calibrator!r}")
    return out


def narrowest_method(K: int, selected: int, delta: float, n: float, split: float, calibrator: Any = "optimal") -> tuple[str, str]:
    """The valid method with the narrowest DKW band, from the design alone; and the reason.

    Compares the DKW half-widths (eq. 11, 14) of ps-dme and bonferroni on n observations with ss-dme's on
    (1 - split) n (Lemma 2, eq. 15; Bonferroni is narrower than the optimal PS-DME when |S| < e ln(K / delta)).

    Parameters
    ----------
    K : int
        Number of configurations (>= 1).
    selected : int
        Number |S| of selected configurations (0 <= |S| <= K).
    delta : float
        Target false coverage rate, strictly between 0 and 1.
    n : float
        Observations per configuration (positive).
    split : float
        SS-DME's fraction of the observations spent on selection, in (0, 1).
    calibrator : "optimal", float or callable, default "optimal"
        PS-DME's calibrator, as in :func:`levels`.

    Returns
    -------
    method : str
        ``"ps-dme"``, ``"bonferroni"`` or ``"ss-dme"`` (``"ps-dme"`` when nothing is selected).
    reason : str
        The three half-widths and the |S| < e ln(K / delta) threshold, or ``"nothing selected"``.

    Raises
    ------
    AssayInputError
        If the design is invalid (as in :func:`levels`), ``n`` or ``split`` is not a finite number, ``n`` is not
        positive, or ``split`` is not in (0, 1).

    Examples
    --------
    >>> method, reason = narrowest_method(10, 2, 0.1, n=200, split=0.5)
    >>> method
    'bonferroni'
    >>> for part in reason.split("; "):
    ...     print(part)
    DKW half-widths at n = 200: ps-dme 0.1372, bonferroni 0.1151, ss-dme (split 0.5) 0.1224
    Bonferroni beats PS-DME when |S| = 2 < e ln(K/delta) = 12.5
    """
    lv = levels(K, selected, delta, calibrator)  # validates K, selected, delta, calibrator
    for name, v in (("n", n), ("split", split)):
        if not _is_number(v) or not math.isfinite(v):
            raise AssayInputError(f"{name} must be a finite number; got {v!r}")
    if n <= 0:
        raise AssayInputError(f"n (observations per configuration) must be positive; got {n!r}")
    if not 0 < split < 1:
        raise AssayInputError(f"split must be in (0, 1); got {split!r}")
    if selected == 0:
        return "ps-dme", "nothing selected"
    width = {
        "ps-dme": math.sqrt(math.log(2 / lv["ps-dme"]) / (2 * n)),
        "bonferroni": math.sqrt(math.log(2 / lv["bonferroni"]) / (2 * n)),
        "ss-dme": math.sqrt(math.log(2 / delta) / (2 * max(1.0, (1 - split) * n))),
    }
    best = min(width, key=width.get)
    thr = math.e * math.log(K / delta)
    reason = (
        f"DKW half-widths at n = {n:g}: ps-dme {width['ps-dme']:.4f}, bonferroni {width['bonferroni']:.4f}, "
        f"ss-dme (split {split:g}) {width['ss-dme']:.4f}; Bonferroni beats PS-DME when |S| = {selected} < "
        f"e ln(K/delta) = {thr:.1f}"
    )
    return best, reason


def _fix_calibrator(select: Any, K: int, delta: float, calibrator: Any,
                    max_selected: Any) -> tuple[Any, int | None, int | None]:
    """The calibrator, fixed before the data as Theorem 1 requires: (calibrator, |S| fixed by the rule or None,
    declared maximum |S| or None).

    "optimal" stays "optimal" when the rule fixes |S| ("all", "top:K"); for a rule whose |S| depends on the data
    it becomes the power calibrator whose tau is optimal (eq. 17) for the declared ``max_selected`` (default K).
    """
    fixed = _fixed_size(select, K)
    if calibrator in (None, "optimal") and fixed is None:
        if max_selected is None:
            max_selected = K
        if isinstance(max_selected, bool) or not isinstance(max_selected, (int, np.integer)) or not 1 <= max_selected <= K:
            raise AssayInputError(f"max_selected must be an integer in [1, K = {K}]; got {max_selected!r}")
        return float(cal.optimal_power_tau(K, int(max_selected), delta)), fixed, int(max_selected)
    if calibrator not in (None, "optimal") and max_selected is not None:
        raise AssayInputError("max_selected only applies to the 'optimal' calibrator of a data-dependent selection")
    return calibrator, fixed, None
