"""Gaussian multiplier bootstrap over item-level contributions: draws, pointwise and simultaneous
intervals, and linear contrasts.

Setting: ``psi`` is an ``M x C`` matrix of item-level contributions (one row per item, one column
per estimand, e.g. per (system, budget) cell), so that ``sqrt(M) (theta_hat - theta)`` is
approximately ``M^{-1/2} sum_i psi_i``. The multiplier bootstrap draws ``zeta_1..zeta_M`` i.i.d.
N(0, 1), ONE per item and shared by every column, and forms

    G* = M^{-1/2} sum_i zeta_i (psi_i - psi_bar)                      (SIREN eq. 72)

Conditional on ``psi`` this vector is *exactly* Gaussian, N(0, Omega_hat) with
``Omega_hat = M^{-1} sum_i (psi_i - psi_bar)(psi_i - psi_bar)'`` (SIREN eq. 75-76). Two engines
produce draws from that law:

* ``"multipliers"`` forms the ``B x M`` multiplier matrix literally (in blocks of rows, so memory stays
  bounded, drawn in parallel threads with one generator per block) and multiplies: cost O(B M C).
* ``"exact"`` (default) draws ``B x C`` standard normals and multiplies by a square root of
  ``Omega_hat``: cost O(M C^2 + B C^2). Because ``zeta Psi_c / sqrt(M)`` has rows i.i.d.
  N(0, Omega_hat) for any ``Psi_c``, the two engines give draws with the same joint law; only the
  random numbers differ. The shared-multiplier dependence across columns is kept in full: it is
  the off-diagonal of ``Omega_hat``.

Intervals are symmetric: ``theta_hat +- c / sqrt(M)`` with ``c`` the (1 - alpha) quantile of
``|G*_c|`` (pointwise) or of ``max_c |G*_c| / s_c`` (simultaneous; ``s_c`` = 1 for the raw band of
the paper, the bootstrap standard deviation for the studentised band).
"""

from __future__ import annotations

import contextlib
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..errors import AssayInputError

__all__ = [
    "center",
    "covariance",
    "draw",
    "default_threads",
    "pointwise_critical",
    "simultaneous_critical",
    "contrast_inference",
]


def center(psi: np.ndarray) -> np.ndarray:
    """Subtract the column means (a no-op up to rounding for exactly centred contributions).

    Parameters
    ----------
    psi : array_like of shape (M, C)
        Item-level contributions, one row per item, one column per estimand.

    Returns
    -------
    numpy.ndarray of shape (M, C)
        Psi_c = psi - psi_bar, as floats.

    Examples
    --------
    >>> center([[1.0, 2.0], [3.0, 0.0], [2.0, 4.0]]).tolist()
    [[-1.0, 0.0], [1.0, -2.0], [0.0, 2.0]]
    """
    psi = np.asarray(psi, dtype=float)
    return psi - psi.mean(axis=0, keepdims=True)


def covariance(psi_c: np.ndarray) -> np.ndarray:
    """Return ``Omega_hat = M^{-1} Psi_c' Psi_c`` for centred contributions (eq. 76).

    Parameters
    ----------
    psi_c : numpy.ndarray of shape (M, C)
        Centred contributions (:func:`center`).

    Returns
    -------
    numpy.ndarray of shape (C, C)
        The covariance estimate Omega_hat.

    Examples
    --------
    >>> covariance(center([[1.0, 2.0], [3.0, 0.0], [2.0, 4.0]])).round(4).tolist()
    [[0.6667, -0.6667], [-0.6667, 2.6667]]
    """
    M = psi_c.shape[0]
    if psi_c.size < _THIN_PRODUCT_ELEMS:
        return (psi_c.T @ psi_c) / M
    # a thin product (C x M times M x C, M >> C): threaded BLAS gains nothing on it and only adds synchronisation,
    # which on busy cores costs far more CPU than the product itself; so one thread
    with _blas_limited(1):
        return (psi_c.T @ psi_c) / M


#: from this many elements on, thin products run with one BLAS thread (below it the limit costs more than it saves)
_THIN_PRODUCT_ELEMS = 2**20


def _sqrt_psd(omega: np.ndarray) -> np.ndarray:
    vals, vecs = np.linalg.eigh((omega + omega.T) / 2)
    vals = np.clip(vals, 0.0, None)
    return vecs * np.sqrt(vals)[None, :]


def draw(
    psi_c: np.ndarray,
    n_boot: int,
    rng: np.random.Generator,
    *,
    engine: str = "exact",
    chunk_elems: int = 2**22,
    threads: int | None = None,
) -> np.ndarray:
    """Draw ``n_boot`` replicates of ``G*`` (shape ``n_boot x C``) from centred contributions.

    ``G* = M^{-1/2} sum_i zeta_i psi_i`` with one N(0, 1) multiplier per item shared by every column (SIREN eq.
    72), drawn by one of the two engines of the module docstring, which give the same conditional law
    N(0, Omega_hat).

    Parameters
    ----------
    psi_c : (M, C) array
        Centred item-level contributions.
    n_boot : int
        The number of bootstrap replicates B.
    rng : numpy.random.Generator
        The source of the random numbers.
    engine : {"exact", "multipliers"}
        See the module docstring; both give the same conditional law. Default ``"exact"``.
    chunk_elems : int
        For ``"multipliers"``: how many multipliers one block of draws holds (2**22 float64 = 34 MB); the draws
        are made a block of ``chunk_elems // M`` rows at a time, so memory stays bounded for any B and M.
    threads : int, optional
        For ``"multipliers"``: how many blocks are drawn at once, in threads (numpy's normal generator and BLAS
        release the GIL). Default: ``OMP_NUM_THREADS`` / ``OPENBLAS_NUM_THREADS`` / ``MKL_NUM_THREADS`` when set,
        else the CPUs this process may use. Each block has its own generator, seeded from ``rng`` in block order,
        so the draws depend on ``rng`` (and ``chunk_elems``) only, never on the number of threads.

    Returns
    -------
    (n_boot, C) array
        The bootstrap replicates of ``G*``, one per row.

    Raises
    ------
    AssayInputError
        When ``engine`` is unknown.

    Examples
    --------
    >>> psi = center(np.random.default_rng(0).normal(size=(200, 3)))
    >>> G = draw(psi, 1000, np.random.default_rng(1), engine="multipliers", threads=1)
    >>> G.shape, G.std(axis=0).round(2).tolist()
    ((1000, 3), [0.98, 0.99, 0.99])
    """
    M, C = psi_c.shape
    if engine == "exact":
        root = _sqrt_psd(covariance(psi_c))
        return rng.standard_normal((n_boot, C)) @ root.T
    if engine == "multipliers":
        out = np.empty((n_boot, C))
        rows = max(1, min(n_boot, chunk_elems // max(M, 1)))
        spans = [(a, min(n_boot, a + rows)) for a in range(0, n_boot, rows)]
        root_seed = np.random.SeedSequence(rng.integers(0, 2**63, size=4).tolist())
        gens = [np.random.default_rng(s) for s in root_seed.spawn(len(spans))]
        scale = 1.0 / np.sqrt(M)

        def block(k: int) -> None:
            a, b = spans[k]
            zeta = gens[k].standard_normal((b - a, M))  # one N(0, 1) multiplier per item and draw (eq. 72)
            out[a:b] = (zeta @ psi_c) * scale

        workers = min(len(spans), threads if threads is not None else default_threads())
        if workers > 1:
            # W threads each drawing a block and multiplying it: BLAS keeps one thread per call meanwhile, so W
            # threads use W cores (nested BLAS threads would oversubscribe them and spin)
            with _blas_limited(1), ThreadPoolExecutor(max_workers=workers) as pool:
                list(pool.map(block, range(len(spans))))
        else:
            for k in range(len(spans)):
                block(k)
        return out
    raise AssayInputError(f"engine must be 'exact' or 'multipliers', got {engine!r}")


def _blas_limited(n: int):
    """A context limiting BLAS to ``n`` threads (threadpoolctl), or doing nothing when that is unavailable."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl is a dependency
        return contextlib.nullcontext()
    return threadpool_limits(limits=n, user_api="blas")


def default_threads() -> int:
    """Return the number of threads for work numpy does not parallelise itself.

    The first of ``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS`` that is set to a positive
    integer (the limit the user gave BLAS), else the number of CPUs this process may run on.

    Returns
    -------
    int
        The thread count, at least 1.
    """
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        v = os.environ.get(var, "").strip()
        if v.isdigit() and int(v) >= 1:
            return int(v)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def pointwise_critical(G: np.ndarray, alpha: float) -> np.ndarray:
    """Return the per-column (1 - alpha) quantile of ``|G*|`` (symmetric pointwise interval).

    Parameters
    ----------
    G : numpy.ndarray of shape (B, C)
        Bootstrap draws G*, one row per draw, one column per estimand.
    alpha : float
        Miscoverage of each pointwise interval.

    Returns
    -------
    numpy.ndarray of shape (C,)
        The critical values c; each interval is ``theta_hat +- c / sqrt(M)``.

    Examples
    --------
    >>> pointwise_critical(np.array([[-1.0, 0.5], [2.0, -0.25], [0.5, 1.0]]), 0.5).tolist()
    [1.0, 0.5]
    """
    return np.quantile(np.abs(G), 1.0 - alpha, axis=0)


def simultaneous_critical(G: np.ndarray, alpha: float, scale: np.ndarray | None = None) -> float:
    """(1 - alpha) quantile of ``max_c |G*_c| / scale_c`` over the columns.

    The critical value ``c`` of the simultaneous symmetric intervals ``theta_hat +- c scale_c / sqrt(M)``.
    Columns whose scale is zero (a constant estimate: all items scored the same) carry no
    randomness (their ``G*`` is identically zero) and are left out of the maximum; with no column left the
    critical value is 0.

    Parameters
    ----------
    G : (B, C) array
        Bootstrap replicates of ``G*`` (:func:`draw`).
    alpha : float
        The miscoverage of the whole band.
    scale : (C,) array, optional
        The per-column scale ``s_c``: None (the default) for 1, the raw band of the paper; the bootstrap standard
        deviation for the studentised band.

    Returns
    -------
    float
        The critical value.

    Examples
    --------
    >>> G = np.random.default_rng(0).standard_normal((4000, 3))
    >>> round(simultaneous_critical(G, 0.05), 2), pointwise_critical(G, 0.05).round(2).tolist()
    (2.4, [2.03, 1.91, 1.94])
    >>> round(simultaneous_critical(G, 0.05, scale=[1.0, 1.0, 0.0]), 2)
    2.24
    """
    A = np.abs(G)
    if scale is not None:
        scale = np.asarray(scale, dtype=float)
        live = scale > 0
        if not live.any():
            return 0.0
        A = A[:, live] / scale[live][None, :]
    if A.shape[1] == 0:
        return 0.0
    return float(np.quantile(A.max(axis=1), 1.0 - alpha))


def contrast_inference(
    theta: np.ndarray,
    W: np.ndarray,
    G: np.ndarray,
    omega: np.ndarray,
    M: int,
    alpha: float,
) -> dict[str, np.ndarray | float]:
    """Estimates, standard errors and intervals for linear contrasts ``W theta``.

    Uses the same bootstrap draws ``G`` as the cells, so the contrasts inherit the shared-
    multiplier dependence (a paired comparison on the same items is much tighter than two
    separate intervals). Returns pointwise symmetric intervals and, over the family of
    contrasts, a studentised simultaneous critical value. The standard deviation of each contrast is the exact
    conditional one, ``sqrt(w' Omega_hat w)`` (the bootstrap law is Gaussian, eq. 75).

    Parameters
    ----------
    theta : (C,) array
        The estimates of the cells.
    W : (L, C) array
        One contrast per row (a single row may be given as a 1-D array).
    G : (B, C) array
        The bootstrap replicates of the cells (:func:`draw`).
    omega : (C, C) array
        ``Omega_hat`` (:func:`covariance`).
    M : int
        The number of items.
    alpha : float
        The miscoverage, of each interval and of the simultaneous family.

    Returns
    -------
    dict
        ``"estimate"`` (``W theta``), ``"se"`` (standard errors), ``"half"`` (pointwise half-widths),
        ``"half_simultaneous"`` (simultaneous half-widths) and ``"critical_simultaneous"`` (the studentised
        simultaneous critical value, a float); the arrays have one entry per contrast.

    Examples
    --------
    >>> G = np.random.default_rng(0).standard_normal((4000, 3))
    >>> out = contrast_inference(np.array([0.7, 0.6, 0.65]), [[1, -1, 0]], G, np.eye(3), 200, 0.05)
    >>> out["estimate"].round(4).tolist(), out["se"].round(4).tolist(), out["half"].round(4).tolist()
    ([0.1], [0.1], [0.1997])
    >>> round(out["critical_simultaneous"], 2)
    2.0
    """
    W = np.atleast_2d(np.asarray(W, dtype=float))
    est = W @ theta
    GW = G @ W.T
    # exact conditional standard deviation of W G* (the bootstrap law is Gaussian, eq. 75)
    sd = np.sqrt(np.clip(np.einsum("lc,cd,ld->l", W, omega, W), 0.0, None))
    crit = pointwise_critical(GW, alpha)
    crit_sim = simultaneous_critical(GW, alpha, scale=sd)
    root = np.sqrt(M)
    return {
        "estimate": est,
        "se": sd / root,
        "half": crit / root,
        "half_simultaneous": crit_sim * sd / root,
        "critical_simultaneous": crit_sim,
    }
