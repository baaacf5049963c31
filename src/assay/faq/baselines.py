"""Baselines for FAQ (Wu, Nair, Candes 2026, Sec. 4 "Baselines" and "Traditional active inference ablation").

Setting: a new model's 0/1 answers ``z_1..z_N`` on a fixed bank of ``N`` questions (one row of ``Z``); the
estimand is the finite-bank accuracy ``theta = mean_j z_j``. Under a label budget ``n_b`` each function below
returns, for every row of ``Z`` at once (rows = independent new models, or independent replications),
a point estimate, its standard error and a Wald CI ``estimate +- z_{1-alpha/2} se`` clipped to [0, 1].

Designs
-------
* :func:`uniform_mean` -- simple random sample WITHOUT replacement of exactly ``n_b`` distinct questions,
  plain sample mean, variance ``(1 - n_b/N) s^2 / n_b`` (finite-population correction, ``s^2`` with ddof=1),
  Wilson score interval with the same correction (:func:`wilson_fpc`; a Wald interval collapses to zero
  width on near-constant models).
  This is the honest "uniform sampling" reference: it is what a practitioner would do with ``n_b`` labels.
* :func:`ht_uniform` -- the paper's "uniform" reference: one Bernoulli(``pi = n_b/N``) label decision per
  question, Horvitz-Thompson estimator with zero predictor. Its variance ``(1-pi) theta / n_b`` is larger
  than the sample mean's ``(1-pi) theta (1-theta) / n_b`` by ``1/(1-theta)`` (plus the Poisson noise in the
  number of labels), so ESS multipliers computed against it are inflated by roughly 1.3-1.5x for typical
  accuracies (theta ~ 0.25-0.35) compared with ESS against :func:`uniform_mean`.
* :func:`aipw` -- sequential active inference of Zrnic & Candes (2024) in nature's order with a fixed
  per-question predictor ``f`` (FAQ eq. 11), policies "bernoulli", "neyman", "2min".
* :func:`ai_factor` -- the paper's ablation: the same sequential scheme whose predictor and labelling policy
  come from the online logistic factor model (Laplace updates, FAQ eqs. 3-5), updated on labelled points only.

Sequential designs (:func:`ht_uniform`, :func:`aipw`, :func:`ai_factor`)
--------------------------------------------------------------------------
Question ``t`` (0-based, natural column order) is labelled iff ``W[:, t] < pi_t`` where
``W = rng.random((M, N))`` is drawn ONCE up front (each of these functions consumes exactly that one call
from ``rng``; reference implementations can therefore share the draws). With a predictable predictor
``f_t`` and probability ``pi_t`` (functions of the past only),

    theta_hat = (1/N) sum_t [ f_t + (z_t - f_t) xi_t / pi_t ],
    sigma^2   = (1/N) sum_t xi_t (1 - pi_t) / pi_t^2 (z_t - f_t)^2,        se = sqrt(sigma^2 / N).

``theta_hat`` is exactly unbiased for ``theta`` and ``se^2`` is exactly unbiased for its variance (the
terms are martingale differences), so the Wald CI is asymptotically valid whatever ``f``.

Labelling policies (Zrnic & Candes 2024, eqs. 3 and 8): with a score ``u_t >= 0`` ("neyman":
``sqrt(f_t (1-f_t))``, "2min": ``2 min(f_t, 1-f_t)``) and ``eta = n_b / (N mean_j u_j)``,

    pi_t = clip(min(eta u_t, (t+1) n_b / N - labels_so_far), 0, 1)      (budget stabilisation)
    pi_t <- (1 - tau) pi_t + tau n_b / N                                 (uniform mixing, tau in (0, 1])

The mixing keeps every ``pi_t >= tau n_b / N > 0``. The number of labels is random; its expectation is at
most about ``n_b`` (the stabilisation never lets the unmixed part run ahead of schedule).
Policy "bernoulli" is the constant ``pi_t = n_b/N`` (as in the paper, where the wrapper is applied to the
Neyman and 2min policies only); with ``f = 0`` it reproduces :func:`ht_uniform` exactly.

Every labelled question is distinct (each question is seen at most once), so ``n_distinct == n_labels``.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np
from scipy.special import expit
from scipy.stats import norm

from ..errors import AssayInputError

__all__ = ["Estimates", "wilson_fpc", "uniform_mean", "ht_uniform", "aipw", "ai_factor", "POLICIES"]

#: labelling policies accepted by :func:`aipw`
POLICIES = ("bernoulli", "neyman", "2min")

_PCLAMP = 1e-12


@dataclass
class Estimates:
    """Per-row results of a baseline; every array has shape ``(M,)``.

    ``estimate``, ``se``, ``lo``, ``hi`` are float64 (``[lo, hi]`` = ``estimate +- z_{1-alpha/2} se`` clipped
    to [0, 1]); ``n_labels`` (int64) is the number of labels used (``n_b`` for fixed-budget designs, random
    for Bernoulli designs); ``n_distinct`` (int64) the number of distinct questions labelled.
    """

    estimate: np.ndarray
    se: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    n_labels: np.ndarray
    n_distinct: np.ndarray


# ----------------------------------------------------------------------------------------------------
# validation


def _check_Z(Z) -> np.ndarray:
    try:
        A = np.asarray(Z)
    except Exception as exc:  # ragged lists and the like
        raise AssayInputError(f"Z must be a 2-D array of 0/1 answers (models x questions): {exc}") from None
    if A.ndim != 2:
        raise AssayInputError(f"Z must be 2-D (models x questions), got an array with {A.ndim} dimension(s)")
    if A.dtype.kind not in "biuf":
        raise AssayInputError(f"Z must be numeric 0/1 (bool, int or float), got dtype {A.dtype}")
    M, N = A.shape
    if M < 1 or N < 2:
        raise AssayInputError(f"Z must have at least 1 row and 2 columns, got shape {A.shape}")
    A = A.astype(np.float64, copy=False)
    if np.isnan(A).any():
        r, c = np.argwhere(np.isnan(A))[0]
        raise AssayInputError(f"Z contains NaN (first at row {r}, column {c}); every answer must be 0 or 1")
    bad = (A != 0) & (A != 1)
    if bad.any():
        r, c = np.argwhere(bad)[0]
        raise AssayInputError(
            f"Z must contain only 0/1 values; found {float(A[r, c])!r} at row {r}, column {c} "
            f"({int(bad.sum())} bad value(s) in total)"
        )
    return A


def _check_nb(n_b, N: int) -> int:
    if isinstance(n_b, bool) or not isinstance(n_b, numbers.Integral):
        raise AssayInputError(f"n_b must be an integer label budget, got {n_b!r} ({type(n_b).__name__})")
    n_b = int(n_b)
    if n_b < 2 or n_b > N:
        raise AssayInputError(f"n_b must satisfy 2 <= n_b <= N = {N} (number of questions), got {n_b}")
    return n_b


def _check_unit_interval(x, name: str, *, closed_right: bool) -> float:
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise AssayInputError(f"{name} must be a real number, got {x!r}")
    x = float(x)
    ok = np.isfinite(x) and x > 0 and (x <= 1 if closed_right else x < 1)
    if not ok:
        interval = "(0, 1]" if closed_right else "(0, 1)"
        raise AssayInputError(f"{name} must lie in {interval}, got {x!r}")
    return x


def _check_rng(rng) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise AssayInputError(
            f"rng must be a numpy.random.Generator (e.g. numpy.random.default_rng(seed)), got {type(rng).__name__}"
        )
    return rng


def _check_vector(x, name: str, N: int) -> np.ndarray:
    try:
        a = np.asarray(x, dtype=np.float64)
    except Exception:
        raise AssayInputError(f"{name} must be a numeric array of shape ({N},)") from None
    if a.shape != (N,):
        raise AssayInputError(f"{name} must have shape ({N},) (one value per question of Z), got {a.shape}")
    if not np.isfinite(a).all():
        raise AssayInputError(f"{name} contains NaN or infinite values (first at index {int(np.argmin(np.isfinite(a)))})")
    return a


def _check_f(f, N: int) -> np.ndarray:
    a = _check_vector(f, "f", N)
    bad = (a < 0) | (a > 1)
    if bad.any():
        j = int(np.argmax(bad))
        raise AssayInputError(f"f must lie in [0, 1] (a per-question probability); f[{j}] = {a[j]!r}")
    return a


def _check_factor(V, prior_mean, prior_cov, N: int):
    try:
        V = np.asarray(V, dtype=np.float64)
    except Exception:
        raise AssayInputError("V must be a numeric (N, k) array of question factors") from None
    if V.ndim != 2 or V.shape[0] != N or V.shape[1] < 1:
        raise AssayInputError(f"V must have shape (N, k) = ({N}, k) with k >= 1 (one row per question of Z), got {V.shape}")
    if not np.isfinite(V).all():
        raise AssayInputError("V contains NaN or infinite values")
    k = V.shape[1]
    try:
        mu = np.asarray(prior_mean, dtype=np.float64)
        S = np.asarray(prior_cov, dtype=np.float64)
    except Exception:
        raise AssayInputError("prior_mean and prior_cov must be numeric arrays") from None
    if mu.shape != (k,):
        raise AssayInputError(f"prior_mean must have shape (k,) = ({k},) to match V, got {mu.shape}")
    if S.shape != (k, k):
        raise AssayInputError(f"prior_cov must have shape (k, k) = ({k}, {k}) to match V, got {S.shape}")
    if not (np.isfinite(mu).all() and np.isfinite(S).all()):
        raise AssayInputError("prior_mean / prior_cov contain NaN or infinite values")
    scale = max(float(np.abs(S).max()), 1e-300)
    if np.abs(S - S.T).max() > 1e-8 * scale:
        raise AssayInputError("prior_cov must be symmetric")
    if np.linalg.eigvalsh(S).min() < -1e-10 * scale:
        raise AssayInputError("prior_cov must be positive semi-definite")
    return V, mu, (S + S.T) / 2


# ----------------------------------------------------------------------------------------------------
# helpers


def _finish(est, se, alpha, n_labels, n_distinct) -> Estimates:
    zq = float(norm.ppf(1 - alpha / 2))
    est = np.asarray(est, dtype=np.float64)
    se = np.asarray(se, dtype=np.float64)
    return Estimates(
        estimate=est,
        se=se,
        lo=np.clip(est - zq * se, 0.0, 1.0),
        hi=np.clip(est + zq * se, 0.0, 1.0),
        n_labels=np.asarray(n_labels, dtype=np.int64),
        n_distinct=np.asarray(n_distinct, dtype=np.int64),
    )


def _clamp_p(P: np.ndarray) -> np.ndarray:
    return np.clip(P, _PCLAMP, 1.0 - _PCLAMP)


# ----------------------------------------------------------------------------------------------------
# public estimators


def wilson_fpc(k, n, N, alpha=0.05) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval for a proportion from ``k`` successes in a simple random sample of ``n`` of ``N``.

    Inverts |p_hat - m| <= z sqrt((1 - n/N) m (1 - m) / n): the Wilson interval with the effective sample size
    n / (1 - n/N), i.e. the finite-population correction applied under the null value m. Unlike the Wald
    interval it never collapses to zero width when every sampled answer agrees (a Wald interval then covers
    the truth only by luck), and it equals the exact answer when n = N.

    Parameters
    ----------
    k : array_like
        Successes in the sample.
    n : array_like
        Sample sizes.
    N : int
        Population size (questions in the bank).
    alpha : float, default 0.05
        Miscoverage: z = the normal 1 - alpha/2 quantile.

    Returns
    -------
    tuple of ndarray
        (lo, hi), clipped to [0, 1].

    Examples
    --------
    >>> lo, hi = wilson_fpc(20, 20, 100)
    >>> print(round(float(lo), 4), round(float(hi), 4))
    0.8668 1.0
    >>> lo, hi = wilson_fpc(12, 20, 20)
    >>> print(round(float(lo), 4), round(float(hi), 4))
    0.6 0.6
    """
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    z = float(norm.ppf(1 - alpha / 2))
    f = np.clip(n / N, 0.0, 1.0)
    p = k / n
    with np.errstate(divide="ignore", invalid="ignore"):
        ne = np.where(f < 1, n / np.maximum(1.0 - f, 1e-300), np.inf)
        z2n = np.where(np.isfinite(ne), z * z / ne, 0.0)
        centre = (p + z2n / 2) / (1 + z2n)
        half = z / (1 + z2n) * np.sqrt(np.maximum(p * (1 - p) / np.where(np.isfinite(ne), ne, 1.0) * (f < 1)
                                                  + z2n / (4 * np.where(np.isfinite(ne), ne, 1.0)), 0.0))
    return np.clip(centre - half, 0.0, 1.0), np.clip(centre + half, 0.0, 1.0)


def uniform_mean(Z, n_b, *, rng, alpha=0.05) -> Estimates:
    """Simple random sample without replacement of ``n_b`` distinct questions per row; sample mean, Wilson interval.

    For each row, ``n_b`` distinct questions are drawn uniformly (the ``n_b`` smallest of ``N`` iid uniform
    keys, i.e. ``argpartition`` of ``rng.random((M, N))``). Estimate = mean of the sampled answers (exactly
    unbiased); ``se`` = sqrt((1 - n_b/N) s^2 / n_b) with ``s^2`` the sample variance (ddof=1), unbiased for the
    design variance. The interval ``[lo, hi]`` is :func:`wilson_fpc`, not estimate +- z se: the Wald interval
    collapses to a point when every sampled answer agrees (near-constant models, small budgets), and an
    effective-sample-size ratio against a reference that does not cover would flatter any method. With
    ``n_b == N`` the answer is exact (se 0, lo = hi = estimate).

    This is the honest fixed-budget uniform reference; :func:`ht_uniform` is the paper's (noisier) one.

    Parameters
    ----------
    Z : array_like
        (M, N) 0/1 answers of M models to the N questions.
    n_b : int
        Questions sampled per model (the budget).
    rng : numpy.random.Generator
        Randomness of the draws.
    alpha : float, default 0.05
        Miscoverage of the interval.

    Returns
    -------
    Estimates
        Per model: ``estimate``, ``se``, ``lo``, ``hi``, ``n_labels``, ``n_distinct``.

    Raises
    ------
    AssayInputError
        When ``Z``, ``n_b``, ``alpha`` or ``rng`` is invalid.

    Examples
    --------
    >>> import numpy as np
    >>> Z = (np.random.default_rng(0).random((2, 500)) < np.array([[0.3], [0.7]])).astype(float)
    >>> est = uniform_mean(Z, 100, rng=np.random.default_rng(1))
    >>> print(est.estimate.round(3), est.se.round(4), est.lo.round(3), est.hi.round(3))
    [0.24 0.66] [0.0384 0.0426] [0.174 0.573] [0.322 0.737]
    """
    A = _check_Z(Z)
    M, N = A.shape
    n_b = _check_nb(n_b, N)
    alpha = _check_unit_interval(alpha, "alpha", closed_right=False)
    rng = _check_rng(rng)

    keys = rng.random((M, N))
    if n_b < N:
        idx = np.argpartition(keys, n_b - 1, axis=1)[:, :n_b]
    else:
        idx = np.broadcast_to(np.arange(N), (M, N))
    S = np.take_along_axis(A, idx, axis=1)
    est = S.mean(axis=1)
    s2 = S.var(axis=1, ddof=1)
    se = np.sqrt((1.0 - n_b / N) * s2 / n_b)
    full = np.full(M, n_b, dtype=np.int64)
    out = _finish(est, se, alpha, full, full)
    out.lo, out.hi = wilson_fpc(S.sum(axis=1), n_b, N, alpha)
    return out


def ht_uniform(Z, n_b, *, rng, alpha=0.05) -> Estimates:
    """The paper's "uniform" reference: Bernoulli(``pi = n_b/N``) labelling, Horvitz-Thompson estimate.

    Each question is labelled independently with probability ``pi = n_b/N`` (decisions
    ``rng.random((M, N)) < pi``); ``theta_hat = (1/N) sum_t xi_t z_t / pi`` (FAQ eq. 11 with predictor 0);
    ``sigma^2 = (1/N) sum_t xi_t (1-pi)/pi^2 z_t^2``, ``se = sqrt(sigma^2/N)``. Both are exactly unbiased.

    The number of labels is Binomial(N, pi), mean ``n_b``. The variance, ``(1-pi) theta / n_b``, exceeds the
    variance ``(1-pi) theta(1-theta)/n_b`` (approx.) of the sample mean of a simple random sample of ``n_b``
    questions (:func:`uniform_mean`) by a factor ``1/(1-theta)``: about 1.3-1.5x for accuracies 0.25-0.35.
    Effective-sample-size gains measured against this reference are inflated by that factor relative to
    gains measured against :func:`uniform_mean`.

    Parameters
    ----------
    Z : array_like
        (M, N) 0/1 answers of M models to the N questions.
    n_b : int
        Expected number of labels per model (the budget).
    rng : numpy.random.Generator
        Randomness of the labelling decisions.
    alpha : float, default 0.05
        Miscoverage of the interval.

    Returns
    -------
    Estimates
        Per model: ``estimate``, ``se``, ``lo``, ``hi``, ``n_labels``, ``n_distinct``.

    Raises
    ------
    AssayInputError
        When ``Z``, ``n_b``, ``alpha`` or ``rng`` is invalid.

    Examples
    --------
    >>> import numpy as np
    >>> Z = (np.random.default_rng(0).random((2, 500)) < np.array([[0.3], [0.7]])).astype(float)
    >>> est = ht_uniform(Z, 100, rng=np.random.default_rng(1))
    >>> print(est.estimate.round(3), est.se.round(4))
    [0.24 0.57] [0.0438 0.0675]
    """
    A = _check_Z(Z)
    M, N = A.shape
    n_b = _check_nb(n_b, N)
    alpha = _check_unit_interval(alpha, "alpha", closed_right=False)
    rng = _check_rng(rng)

    W = rng.random((M, N))
    return _bernoulli_constant(A, n_b, np.zeros(N), W, alpha)


def _bernoulli_constant(A, n_b, f, W, alpha) -> Estimates:
    """Constant ``pi = n_b/N`` Bernoulli design with fixed predictor ``f`` (eq. 11), fully vectorised."""
    M, N = A.shape
    pi = n_b / N
    xi = W < pi
    R = A - f
    est = f.mean() + np.where(xi, R, 0.0).sum(axis=1) / (pi * N)
    sig2 = np.where(xi, R * R, 0.0).sum(axis=1) * ((1.0 - pi) / pi**2) / N
    n_lab = xi.sum(axis=1)
    return _finish(est, np.sqrt(sig2 / N), alpha, n_lab, n_lab)


def aipw(Z, n_b, f, *, policy="neyman", tau=0.25, rng, alpha=0.05) -> Estimates:
    """Sequential active inference (Zrnic & Candes 2024) in nature's order with predictor ``f`` (FAQ eq. 11).

    Question ``t = 0..N-1`` is labelled with probability ``pi_t`` (decisions ``rng.random((M, N))[:, t] <
    pi_t``); ``theta_hat = (1/N) sum_t [f_t + (z_t - f_t) xi_t/pi_t]``,
    ``sigma^2 = (1/N) sum_t xi_t (1-pi_t)/pi_t^2 (z_t - f_t)^2``, ``se = sqrt(sigma^2/N)``.

    Parameters
    ----------
    f : (N,) array in [0, 1]
        Fixed per-question predictor, e.g. the historical per-question mean (FAQ's ``p_bar``); zeros give
        the Horvitz-Thompson estimator.
    policy : {"bernoulli", "neyman", "2min"}
        "bernoulli": ``pi_t = n_b/N`` (no wrapper, ``tau`` irrelevant). "neyman": score ``u_t = sqrt(f_t
        (1-f_t))``; "2min": ``u_t = 2 min(f_t, 1-f_t)``. For the latter two ``eta = n_b/(N mean_j u_j)``,
        ``pi_t = clip(min(eta u_t, (t+1) n_b/N - labels_so_far), 0, 1)`` (budget stabilisation, Zrnic-Candes
        eq. 8) then ``pi_t <- (1-tau) pi_t + tau n_b/N``. If every score is 0 (all ``f`` in {0, 1}) the
        policy falls back to "bernoulli".
    tau : float in (0, 1]
        Uniform mixing weight; keeps ``pi_t >= tau n_b/N > 0``.

    The loop runs over the ``N`` questions; each step is vectorised over the ``M`` rows.
    """
    A = _check_Z(Z)
    M, N = A.shape
    n_b = _check_nb(n_b, N)
    f = _check_f(f, N)
    if not isinstance(policy, str) or policy not in POLICIES:
        raise AssayInputError(f"unknown policy {policy!r}; accepted policies: {', '.join(map(repr, POLICIES))}")
    tau = _check_unit_interval(tau, "tau", closed_right=True)
    alpha = _check_unit_interval(alpha, "alpha", closed_right=False)
    rng = _check_rng(rng)

    W = rng.random((M, N))
    if policy == "neyman":
        u = np.sqrt(f * (1.0 - f))
    elif policy == "2min":
        u = 2.0 * np.minimum(f, 1.0 - f)
    else:
        u = None
    if u is None or not u.mean() > 0:
        return _bernoulli_constant(A, n_b, f, W, alpha)

    base = n_b / N
    eta = n_b / (N * u.mean())
    labels = np.zeros(M)
    corr = np.zeros(M)
    sig = np.zeros(M)
    for t in range(N):
        pi = np.clip(np.minimum(eta * u[t], (t + 1) * base - labels), 0.0, 1.0)
        pi = (1.0 - tau) * pi + tau * base
        xi = W[:, t] < pi
        r = A[:, t] - f[t]
        corr += np.where(xi, r / pi, 0.0)
        sig += np.where(xi, (1.0 - pi) / pi**2 * r * r, 0.0)
        labels += xi
    est = f.mean() + corr / N
    n_lab = labels.astype(np.int64)
    return _finish(est, np.sqrt(sig / N / N), alpha, n_lab, n_lab)


def ai_factor(Z, n_b, V, prior_mean, prior_cov, *, tau=0.25, rng, alpha=0.05) -> Estimates:
    """FAQ's "traditional active inference" ablation: Zrnic-Candes sequential AI + online factor model.

    Per row, a Gaussian ``N(u_hat, Sigma)`` over the new model's factor (start ``prior_mean``, ``prior_cov``)
    gives predictions ``p_j = sigmoid(u_hat . V_j)`` (clamped to [1e-12, 1-1e-12]). At step ``t`` (natural
    order, using the CURRENT ``p``, i.e. before ``z_t`` is seen): score ``u_t = 2 min(p_t, 1-p_t)``,
    ``eta_t = n_b / (N mean_j u_j)``, ``pi_t`` from the stabilisation wrapper and ``tau`` mixing exactly as
    in :func:`aipw`, predictor ``f_t = p_t``; the estimate and se follow eq. 11 / the module docstring.
    After a LABELLED step the factor gets one online Laplace update (FAQ eqs. 3-5), with
    ``w = p_t (1-p_t)`` and ``s = Sigma V_t``::

        Sigma <- Sigma - w s s^T / (1 + w V_t . s)
        u_hat <- u_hat + (z_t - p_t) s / (1 + w V_t . s)       (= Sigma_new (z_t - p_t) V_t)

    Unlabelled steps leave the factor unchanged. Coverage does not depend on the factor model being right.

    Parameters
    ----------
    V : (N, k) question factors; prior_mean : (k,); prior_cov : (k, k) symmetric PSD.
    tau : float in (0, 1]; uniform mixing weight.

    Cost: ``P = sigmoid(U V^T)`` (M x N) and each row's mean score are kept and recomputed only for the
    rows labelled at step ``t``, so the total work is O(M n_b N k) on average, not O(M N^2 k).
    Uses exactly one draw ``rng.random((M, N))`` for the label decisions.
    """
    A = _check_Z(Z)
    M, N = A.shape
    n_b = _check_nb(n_b, N)
    V, mu, S0 = _check_factor(V, prior_mean, prior_cov, N)
    tau = _check_unit_interval(tau, "tau", closed_right=True)
    alpha = _check_unit_interval(alpha, "alpha", closed_right=False)
    rng = _check_rng(rng)

    W = rng.random((M, N))
    Uh = np.tile(mu, (M, 1))
    Sig = np.tile(S0, (M, 1, 1))
    VT = np.ascontiguousarray(V.T)
    P = _clamp_p(expit(Uh @ VT))
    ubar = (2.0 * np.minimum(P, 1.0 - P)).mean(axis=1)

    base = n_b / N
    labels = np.zeros(M)
    acc = np.zeros(M)
    sig = np.zeros(M)
    for t in range(N):
        p = P[:, t].copy()
        score = 2.0 * np.minimum(p, 1.0 - p)
        eta = n_b / (N * ubar)  # ubar >= 2e-12 thanks to the clamp
        pi = np.clip(np.minimum(eta * score, (t + 1) * base - labels), 0.0, 1.0)
        pi = (1.0 - tau) * pi + tau * base
        xi = W[:, t] < pi
        r = A[:, t] - p
        acc += p + np.where(xi, r / pi, 0.0)
        sig += np.where(xi, (1.0 - pi) / pi**2 * r * r, 0.0)
        labels += xi

        rows = np.flatnonzero(xi)
        if rows.size == 0:
            continue
        v = V[t]
        Sr = Sig[rows]  # (m, k, k)
        s = Sr @ v  # (m, k)
        w = p[rows] * (1.0 - p[rows])
        denom = 1.0 + w * (s @ v)
        Sn = Sr - (w / denom)[:, None, None] * (s[:, :, None] * s[:, None, :])
        Sig[rows] = 0.5 * (Sn + np.swapaxes(Sn, 1, 2))
        Uh[rows] += (r[rows] / denom)[:, None] * s
        Pr = _clamp_p(expit(Uh[rows] @ VT))
        P[rows] = Pr
        ubar[rows] = (2.0 * np.minimum(Pr, 1.0 - Pr)).mean(axis=1)
    est = acc / N
    n_lab = labels.astype(np.int64)
    return _finish(est, np.sqrt(sig / N / N), alpha, n_lab, n_lab)
