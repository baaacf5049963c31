"""FAQ's factor model as a predictor another method can use: each model's posterior over its latent factor, from the
history's prior, updated with the model's own answers by FAQ's online Laplace step (eqs. 3-5), and its predicted
probability of answering each question right (eq. 2). The adaptive comparison (:mod:`assay.compare.adaptive`) draws
its next questions where these predictions say the open pairs disagree; FAQ's own loop (:mod:`assay.faq.core`)
runs the same update inside its rounds.

:func:`fitted_factors` gives the fitted factor model of a history (FAQ's default fit, cached), the public way to a
:class:`~assay.faq.FactorModel` from a score table.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from scipy.special import expit

from ..stats.special import clamp_p
from .core import laplace_step

__all__ = ["FactorPosterior", "fitted_factors"]


def fitted_factors(history: Any, *, cache: bool = True, progress=None):
    """The fitted factor model of ``history``: a models x items 0/1 table (wide, long ``model, item, score``, or an
    array), fitted with FAQ's default fit (cached under :func:`assay.faq.factor_cache_dir`), or a
    :class:`~assay.faq.FactorModel` (fitted on its own history when it is not yet).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> H = pd.DataFrame((rng.random((30, 40)) < 0.6).astype(float), columns=[f"q{j}" for j in range(40)])
    >>> fm = fitted_factors(H, cache=False)           # doctest: +SKIP
    """
    from .fit import _factors

    fm, _, _, _ = _factors(history, None, cache=cache, progress=progress)
    return fm


class FactorPosterior:
    """Each of ``K`` models' predicted probability of answering each bank question correctly, from a fitted factor
    model ``fm`` (its question factors, offsets and the prior over a model's factor), updated with the model's own
    answers. Questions the history lacks (ids of ``bank_ids`` absent from ``fm``) get no prediction (``known``
    False; 0.5 in :meth:`predict`)."""

    def __init__(self, fm: Any, bank_ids: Sequence[str], K: int) -> None:
        cols = {str(c): i for i, c in enumerate(fm.col_labels_)}
        pos = np.array([cols.get(str(i), -1) for i in bank_ids])
        self.known = pos >= 0
        k = fm.V_.shape[1]
        self.V = np.zeros((len(pos), k))
        self.b = np.zeros(len(pos))
        self.V[self.known] = np.asarray(fm.V_, dtype=float)[pos[self.known]]
        self.b[self.known] = np.asarray(fm.b_, dtype=float)[pos[self.known]]
        mean, cov = fm.prior_()
        self.u = np.tile(np.asarray(mean, dtype=float), (K, 1))
        self.Sigma = np.tile(np.asarray(cov, dtype=float), (K, 1, 1))

    def predict(self, models: np.ndarray) -> np.ndarray:
        """(len(models), N) probabilities (0.5 where the history has no prediction)."""
        x = self.u[models] @ self.V.T + self.b
        return np.where(self.known, clamp_p(expit(x)), 0.5)

    def update(self, models: np.ndarray, items: np.ndarray, Z: np.ndarray) -> None:
        """Each of ``models`` answered ``items`` (in order) with 0/1 scores ``Z`` (len(models), len(items))."""
        u, Sigma = self.u[models], self.Sigma[models]
        for j, item in enumerate(items):
            if not self.known[item]:
                continue
            v = np.broadcast_to(self.V[item], u.shape).copy()
            p = clamp_p(expit(u @ self.V[item] + self.b[item]))
            laplace_step(u, Sigma, v, p, (Z[:, j] > 0.5).astype(float))
        self.u[models], self.Sigma[models] = u, Sigma
