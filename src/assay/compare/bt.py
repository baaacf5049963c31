"""Bradley-Terry strengths from pairwise preferences, with a cluster-robust covariance (issue 54's engine; no command
uses it yet).

Model. Judgment i compares models a_i and b_i with outcome y_i in [0, 1] (model a's share of the win: a tie counts
as half a win each way, the fractional-outcome form FastChat's tie handling amounts to), weight w_i, and
P(a beats b) = sigma(theta_a - theta_b). The strengths are identified by centring, sum theta = 0, so nothing depends
on an anchor model. The maximum-likelihood fit is Newton's method on the weighted logistic log-likelihood in the
K - 1 free coordinates (theta_K = -sum of the others).

Covariance. The sandwich H^-1 (C / (C - 1) sum_c u_c u_c') H^-1, with H the observed information and u_c the sum of
the score contributions of cluster c (an item: the position-swapped games of one comparison, and every comparison
on one question, are one cluster, never independent draws). It is valid whatever the judgments' dependence within
an item, and it does not assume the Bradley-Terry model is right (the target is then the best-fitting strengths).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..errors import AssayInputError

__all__ = ["BTFit", "fit_bt"]


class BTFit(NamedTuple):
    """Centred strengths ``theta`` (K,), their covariance ``cov`` (K, K), the log-likelihood, Newton iterations,
    and the number of clusters used."""

    theta: np.ndarray
    cov: np.ndarray
    loglik: float
    iterations: int
    clusters: int


def _basis(K: int) -> np.ndarray:
    """(K, K - 1): free coordinates -> centred strengths (each free coordinate minus their mean, the last model
    the negative of the others' sum), so that theta = B @ beta sums to 0."""
    B = np.vstack([np.eye(K - 1), -np.ones((1, K - 1))])
    return B - B.mean(axis=0, keepdims=True)


def fit_bt(a: np.ndarray, b: np.ndarray, y: np.ndarray, K: int, *, weight: np.ndarray | None = None,
           clusters: np.ndarray | None = None, tol: float = 1e-10, max_iter: int = 100) -> BTFit:
    """Fit centred Bradley-Terry strengths by maximum likelihood, with the cluster-robust sandwich covariance.

    Parameters
    ----------
    a, b : ndarray of int
        (n,) the two models of each judgment, codes 0 .. K-1.
    y : ndarray
        (n,) model a's share of the win, in [0, 1].
    K : int
        The number of models.
    weight : ndarray, optional
        (n,) how many judgments each row counts as (default 1).
    clusters : ndarray of int, optional
        (n,) cluster codes (default: each judgment its own cluster).
    tol, max_iter : Newton's stopping rule (the largest step in the free coordinates) and its iteration cap.

    Returns
    -------
    BTFit

    Raises
    ------
    AssayInputError
        With fewer than 2 models, fewer than 2 clusters, or strengths that do not exist: a model that wins (or
        loses) every comparison it is in, or models in two groups never compared (the likelihood has no maximum).

    Examples
    --------
    >>> a = np.array([0, 0, 1, 1, 2, 0]); b = np.array([1, 2, 2, 0, 0, 2])
    >>> y = np.array([1.0, 1.0, 0.5, 0.0, 0.0, 0.0])
    >>> fit = fit_bt(a, b, y, 3)
    >>> print(fit.theta.round(3), round(float(fit.theta.sum()), 12))
    [ 1.036 -1.012 -0.025] 0.0
    """
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    y = np.asarray(y, np.float64)
    n = len(y)
    w = np.ones(n) if weight is None else np.asarray(weight, np.float64)
    if K < 2:
        raise AssayInputError("Bradley-Terry strengths need at least 2 models")
    cl = np.arange(n) if clusters is None else np.unique(np.asarray(clusters), return_inverse=True)[1].ravel()
    C = int(cl.max()) + 1 if n else 0
    if C < 2:
        raise AssayInputError("a cluster-robust covariance needs at least 2 clusters (items)")
    _check_connected(a, b, y, w, K)
    B = _basis(K)
    Xb = B[a] - B[b]  # (n, K - 1): each judgment's design row in the free coordinates
    beta = np.zeros(K - 1)
    it = 0
    for it in range(1, max_iter + 1):
        eta = Xb @ beta
        p = 1.0 / (1.0 + np.exp(-eta))
        g = Xb.T @ (w * (y - p))
        H = (Xb * (w * p * (1.0 - p))[:, None]).T @ Xb
        try:
            step = np.linalg.solve(H, g)
        except np.linalg.LinAlgError:
            raise AssayInputError("the Bradley-Terry fit has no unique maximum (some strengths are not tied to the "
                                  "others by any comparison)") from None
        beta += step
        if np.max(np.abs(step)) < tol:
            break
    else:
        raise AssayInputError(f"the Bradley-Terry fit did not settle in {max_iter} Newton steps: some model's "
                              "strength runs to infinity (it beats, or loses to, everything it is linked to)")
    eta = Xb @ beta
    p = 1.0 / (1.0 + np.exp(-eta))
    H = (Xb * (w * p * (1.0 - p))[:, None]).T @ Xb
    U = np.zeros((C, K - 1))
    np.add.at(U, cl, Xb * (w * (y - p))[:, None])
    meat = U.T @ U * (C / (C - 1.0))
    Hinv = np.linalg.inv(H)
    V = Hinv @ meat @ Hinv
    with np.errstate(divide="ignore"):
        ll = float(np.sum(w * (y * np.log(p) + (1.0 - y) * np.log1p(-p))))
    return BTFit(theta=B @ beta, cov=B @ V @ B.T, loglik=ll, iterations=it, clusters=C)


def _check_connected(a: np.ndarray, b: np.ndarray, y: np.ndarray, w: np.ndarray, K: int) -> None:
    """The maximum exists when every model both wins and loses something (fractionally counts) against models
    linked to all others: refuse a model that never loses or never wins, and models split into groups never
    compared."""
    wins = np.bincount(a, weights=w * y, minlength=K) + np.bincount(b, weights=w * (1.0 - y), minlength=K)
    losses = np.bincount(a, weights=w * (1.0 - y), minlength=K) + np.bincount(b, weights=w * y, minlength=K)
    for what, x in (("wins every comparison it is in", losses), ("loses every comparison it is in", wins)):
        bad = np.flatnonzero(x <= 0)
        if len(bad):
            raise AssayInputError(f"model {int(bad[0])} {what}: its Bradley-Terry strength is infinite (no maximum "
                                  "likelihood); compare it with stronger (or weaker) models, or leave it out")
    parent = np.arange(K)

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, j in set(zip(a.tolist(), b.tolist())):
        ri, rj = find(i), find(j)
        if ri != rj:
            parent[ri] = rj
    roots = {find(i) for i in range(K)}
    if len(roots) > 1:
        raise AssayInputError(f"the models fall into {len(roots)} groups never compared with each other: their "
                              "strengths cannot be put on one scale")
