"""Logistic factor model for a partially observed 0/1 history (FAQ paper, Sec. 3, eq. 13).

``P(H_ij = 1) = sigmoid(u_i . v_j [+ b_j])`` fitted on the OBSERVED entries of a models x items
history by L-BFGS-B (scipy) on a MAP objective, with optional cross-validation over (k, lambda)
and an overfitting guard that is never silent.

Objective (what is minimised, ``n`` = number of observed training entries)::

    f(U, V, b) = (1/n) sum_{(i,j) observed} BCE(H_ij, sigmoid(u_i . v_j + b_j))
                 + weight_decay / (2 n) * (||U||_F^2 + ||V||_F^2 + ||b||^2)

i.e. ``n * f`` is the negative log posterior of eq. 13's likelihood under independent N(0, 1/weight_decay)
priors on every factor entry (and on b). ``weight_decay`` is therefore a prior *precision* and does not
depend on the size of the history: a small history is automatically regularised more, relative to its
likelihood, than a big one. (The released code instead used AdamW's decoupled decay ``lambda`` with a fixed
2,000 iterations; its ``lambda`` is not on the same scale and its result depends on the iteration budget.
Here the fit runs to convergence, so the answer depends on (k, weight_decay) only, and overfitting is
controlled by the penalty and by cross-validation, not by when the optimiser happens to stop.)

Bias: the paper (eq. 13; notes: "no bias terms, no intercepts") uses none, so ``bias=False`` is the default.
``bias=True`` adds a per-item intercept b_j, penalised with the same precision.

Missing rows / columns: a model (row) or item (column) with no observed entry carries no likelihood; its
MAP factor is the prior mean 0. Such rows / columns are excluded from the optimisation, given zero factors
(so ``predict_proba`` returns sigmoid(0 + b_j) = 0.5 without bias for them), listed in ``empty_rows_`` /
``empty_cols_``, reported with a warning, and the empty rows are excluded from ``prior_mean_`` /
``prior_cov_``.

Overfitting guard: a fit always reports ``train_logloss_`` and ``heldout_logloss_``. With ``cv`` set the
held-out loss is the CV mean at the chosen (k, lambda); otherwise a random ``holdout`` fraction of observed
entries is held out, the model fitted on the rest to measure the held-out loss, then refitted on all entries
(warm-started). If ``train_logloss_ / heldout_logloss_ < overfit_ratio`` (default 0.5) an
:class:`OverfitWarning` is emitted and ``overfit_warning_`` is set to True. Measured on 650 models x 1,351
MMLU-Pro math questions (Open LLM Leaderboard): k=64, weight_decay=1 reaches train log-loss 0.039 (the
released recipe's 0.04) with held-out 0.34, worse than per-item means (0.33): ratio 0.11, the guard fires;
k=64, weight_decay=1e-3: train 6e-5, held-out 2.8. The guard also fires when the
held-out loss is worse than the per-item-mean baseline (``baseline_logloss_``). With ``cv=None`` and
``holdout=0`` no held-out check is possible and a warning says so.
"""

from __future__ import annotations

import os
import threading
import warnings
from typing import Sequence

import numpy as np
import pandas as pd
from scipy.optimize import minimize
from scipy.special import expit

from ..errors import AssayInputError

__all__ = ["FactorModel", "OverfitWarning", "FactorFitWarning"]


class OverfitWarning(UserWarning):
    """The factor model fits its training entries far better than held-out entries."""


class FactorFitWarning(UserWarning):
    """Something about a factor-model fit the user should know (non-convergence, empty rows, no holdout)."""


# ----------------------------------------------------------------------------------------------------
# objective


def _unpack(theta: np.ndarray, m: int, n: int, k: int, bias: bool):
    U = theta[: m * k].reshape(m, k)
    V = theta[m * k : m * k + n * k].reshape(n, k)
    b = theta[m * k + n * k :] if bias else None
    return U, V, b


#: rows per block when the log-partition sum is formed as the log of products (each factor is in [1, 2], so a
#: product of 256 of them stays below 2^256, far inside float64's range)
_PROD_ROWS = 256
#: log 2: each observed entry's log-partition term is log 2 - log(1 + |tanh(x / 2)|) (:func:`_objective`)
_LOG2 = float(np.log(2.0))


#: bytes of the float32 models x items buffers one objective task covers (about 4 MB: at 2,112 x 12,032, blocks of
#: 80 rows and 496 columns; large enough that a block's matrix products run at the speed of whole-array ones, small
#: enough for a block's elementwise passes to stay in cache and for the blocks to share out evenly on 2-4 threads).
#: The tasks are fixed blocks of the history's rows (then of its
#: columns) cut from its shape alone (:func:`_blocks`), never from the number of threads: each block is computed by the
#: same calls on one thread or four, and the blocks' partial sums are added in block order, so the objective is the
#: same bit for bit on any number of threads whatever tile sizes the machine's BLAS kernels use
_TASK_BYTES = 4 << 20
#: a block's rows (columns) are a multiple of this (whole SIMD vectors and cache lines of float32 in a column block)
_TASK_ALIGN = 16
#: histories with fewer entries than this are fitted on one thread: their fits take seconds, and they are what studies
#: and tests run many of side by side in processes that already fill the CPUs (threads were measured at paper size)
_THREAD_MIN_ENTRIES = 1 << 21
#: threads for one objective evaluation: None = the CPUs this process may use (at most 4; ``OMP_NUM_THREADS``, set
#: to 1 in assay's worker processes, caps it); the CV's worker processes set 1 (they already fill the CPUs)
_THREADS: int | None = None


def _threads(entries: int) -> int:
    if _THREADS is not None:
        return max(1, int(_THREADS))
    if entries < _THREAD_MIN_ENTRIES:
        return 1
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    cap = os.environ.get("OMP_NUM_THREADS", "")
    if cap.isdigit() and int(cap) > 0:
        cpus = min(cpus, int(cap))
    return max(1, min(4, cpus))


def _blocks(length: int, width: int) -> list[tuple[int, int]]:
    """[lo, hi) blocks of ``range(length)`` for the objective's tasks, each ``width`` float32 entries across: about
    _TASK_BYTES a block, a multiple of _TASK_ALIGN long (the last one ragged). A function of the array's shape only,
    so every number of threads computes the same blocks with the same calls."""
    step = max(_TASK_ALIGN, _TASK_BYTES // (4 * max(width, 1)) // _TASK_ALIGN * _TASK_ALIGN)
    return [(i, min(i + step, length)) for i in range(0, length, step)]


def _thread_pool(threads: int):
    """A pool of ``threads`` threads for one fit's objective (``None`` for one thread): made by the fit and shut down
    when it ends, so no thread outlives a fit (a process forked later, for the CV or a protocol, inherits none) and
    fits running at once in several threads of a program never share one."""
    if threads <= 1:
        return None
    import concurrent.futures

    return concurrent.futures.ThreadPoolExecutor(threads, thread_name_prefix="assay-faq-fit")


def _map(fn, tasks: list, threads: int, pool=None) -> list:
    """``[fn(*t) for t in tasks]``, on ``threads`` threads when more than one (numpy and BLAS release the GIL): on
    ``pool`` (the fit's), else on a pool for this call alone."""
    if threads <= 1 or len(tasks) <= 1:
        return [fn(*t) for t in tasks]
    if pool is None:
        with _thread_pool(threads) as own:
            return list(own.map(lambda t: fn(*t), tasks))
    return list(pool.map(lambda t: fn(*t), tasks))


def _objective(theta, Y, M, k, weight_decay, bias, work=None):
    """Mean BCE over observed entries + weight_decay/(2 n) * squared norms (eq. 13 + L2 prior) and its gradient.

    ``Y``: models x items 0/1 array with 0 at missing cells, int8 (what a fit holds: a float64 operand is formed a
    block at a time for the two matrix products, :func:`_y_times`, :func:`_yt_times`) or float64; ``M``: bool (or
    float32) mask (True = observed), or ``None`` when every entry is observed (the fast path: no mask products). The
    logits and the sigmoid are computed in float32 (the memory-bound part) and every sum is accumulated in float64.
    Each entry's transcendental is one t = tanh(x / 2): sigmoid(x) = (1 + t) / 2, and softplus(x) = max(x, 0) +
    log 2 - log(1 + |t|), the sum of log(1 + |t|) taken as the log of float64 products over blocks of rows (no
    per-entry logarithm). Each entry's sigmoid and log-partition term then carry an absolute error of about 1e-7
    (float32 rounding of t; the relative error of a sigmoid below 1e-7 is large, its absolute error is not), far
    below the L-BFGS stopping tolerance; tests/test_faq_factor.py checks the value and the gradient against float64
    sums. The data term's linear
    part sum(Y * X) is formed as sum_i u_i . (Y V)_i and the gradient's Y part as Y V and Y' U
    (float64 matrix products), so Y is never multiplied entrywise. ``work``: a dict the caller keeps between calls,
    holding the three float32 models x items buffers and the float64 block buffers of the products (reused, not
    reallocated, at every evaluation) and the fit's thread pool (``pool``; without one, a call that uses threads
    makes its own).

    The work is done in tasks over fixed blocks of rows (the logits, the sigmoid, the row products and the blocks'
    partial sums) and then over fixed blocks of columns (the column products and sums), on up to 4 threads for a
    large history (:func:`_threads`). The blocks come from the history's shape alone (:func:`_blocks`): one thread
    computes the same blocks with the same calls as four, and the partial sums are added in block order, so the
    value and the gradient are the same bit for bit on any number of threads, whatever the BLAS kernels' tile
    sizes (tests/test_faq_factor.py checks it under each OpenBLAS kernel the CPU can run).
    Returns (f, grad) with grad flattened like ``theta`` (float64).
    """
    m, n = Y.shape
    mk, nk = m * k, n * k
    U64 = theta[:mk].reshape(m, k)
    V64 = theta[mk:mk + nk].reshape(n, k)
    b64 = theta[mk + nk:] if bias else None
    # the logits are formed halved, x / 2 = (U / 2) V' + b / 2 (scaling by 2 is exact in floating point), as tanh
    # takes them (below); U / 2 also gives the column products s' U directly from the rows' 2 s
    Uh = (0.5 * U64).astype(np.float32)
    V = V64.astype(np.float32)
    bh = (0.5 * b64).astype(np.float32)[None, :] if bias else None
    work, nobs = _objective_work(work, Y, M, bias)
    X, e, s = work["X"], work["e"], work["s"]
    threads = _threads(m * n)
    YV = np.empty((m, k))
    sV = np.empty((m, k), np.float32)

    def rows(lo, hi):
        x, eb, sb = X[lo:hi], e[lo:hi], s[lo:hi]
        np.matmul(Uh[lo:hi], V.T, out=x)  # half the logits
        if bias:
            x += bh
        _entry_terms(x, eb, sb, None if M is None else M[lo:hi])
        YV[lo:hi] = _y_times(Y[lo:hi], V64, work)
        np.matmul(sb, V, out=sV[lo:hi])  # 2 s V
        pos = 2.0 * float(x.sum(dtype=np.float64))
        logs = sum(float(np.log(np.prod(eb[i:i + _PROD_ROWS], axis=0, dtype=np.float64)).sum())
                   for i in range(0, hi - lo, _PROD_ROWS))
        return pos, logs

    parts = _map(rows, _blocks(m, n), threads, work["pool"])
    gYt = np.empty((n, k))
    sTU = np.empty((n, k), np.float32)
    colsum = np.empty(n) if bias else None

    def cols(lo, hi):
        sb = s[:, lo:hi]
        np.matmul(sb.T, Uh, out=sTU[lo:hi])  # (2 s)' (U / 2) = s' U
        gYt[lo:hi] = _yt_times(Y[:, lo:hi], U64, work)
        if bias:
            colsum[lo:hi] = 0.5 * sb.sum(axis=0, dtype=np.float64)

    _map(cols, _blocks(n, m), threads, work["pool"])
    possum, logsum = _block_sums(parts, nobs)
    lin = float(np.einsum("ik,ik->", U64, YV))
    if bias:
        ysum = work["ysum"]
        lin += float(ysum @ b64)
    f_data = (possum + logsum - lin) / nobs
    c = weight_decay / nobs
    f_pen = 0.5 * c * float(theta @ theta)
    gU = (0.5 * sV.astype(np.float64) - YV) / nobs + c * U64
    gV = (sTU.astype(np.float64) - gYt) / nobs + c * V64
    parts = [gU.ravel(), gV.ravel()]
    if bias:
        parts.append((colsum - ysum) / nobs + c * b64)
    return f_data + f_pen, np.concatenate(parts)


def _objective_work(work: dict | None, Y, M, bias: bool) -> tuple[dict, float]:
    """The objective's reusable buffers (made again when the shape changes) and the number of observed entries; the
    counts fixed during a fit (observed entries, ``Y``'s column sums with a bias) are computed once into ``work``."""
    m, n = Y.shape
    if work is None:
        work = {}
    if work.get("shape") != (m, n):
        pool = work.get("pool")
        work.clear()
        work.update(shape=(m, n), pool=pool, X=np.empty((m, n), np.float32), e=np.empty((m, n), np.float32),
                    s=np.empty((m, n), np.float32))
    if M is None:
        nobs = float(m * n)
    else:
        if "nobs" not in work:
            work["nobs"] = float(M.sum())  # M is fixed during a fit: counted once
        nobs = work["nobs"]
    if bias and "ysum" not in work:
        work["ysum"] = Y.sum(axis=0, dtype=np.float64)  # Y is fixed during a fit: summed once
    return work, nobs


def _entry_terms(x: np.ndarray, eb: np.ndarray, sb: np.ndarray, mb) -> None:
    """Turn a block of half logits ``x`` into its per-entry terms, in place: ``sb`` = 2 sigmoid, ``eb`` = 1 + |t|
    (the log-partition factor) and ``x`` = max(x, 0) / 2, each zeroed (``eb``: 1) where the mask ``mb`` is False."""
    # one transcendental per entry, t = tanh(x / 2), gives both the sigmoid, sigmoid(x) = (1 + t) / 2, and the
    # log-partition, log(1 + exp(-|x|)) = log 2 - log(1 + |t|)
    np.tanh(x, out=sb)
    np.abs(sb, out=eb)
    if mb is not None:
        eb *= mb  # an unobserved entry: 1 + 0, whose log is 0, and below a sigmoid of 0
    eb += 1.0
    sb += 1.0  # 2 sigmoid(x); the products below halve it exactly
    if mb is not None:
        sb *= mb
    np.maximum(x, 0.0, out=x)  # max(x, 0) / 2
    if mb is not None:
        x *= mb


def _block_sums(parts: list[tuple[float, float]], nobs: float) -> tuple[float, float]:
    """The row blocks' partial sums (max(x, 0) and log(1 + |t|)) added in block order (the same order on any number
    of threads): the data term's positive part and its log-partition sum."""
    possum = 0.0
    logsum = nobs * _LOG2
    for pos, logs in parts:
        possum += pos
        logsum -= logs
    return possum, logsum


#: bytes of the float64 block through which an int8 Y enters a matrix product (a few MB; at least _BLOCK_ALIGN rows
#: or columns: at 2,112 x 12,032 the block is 64 rows, 6.2 MB, where a whole float64 Y took 203 MB)
_BLOCK_BYTES = 4 << 20
#: a block's rows (columns) are a multiple of this
_BLOCK_ALIGN = 64


def _block_len(length: int, width: int) -> int:
    """Rows (or columns) per block: at most _BLOCK_BYTES of float64 and an eighth of ``length`` (so the block is no
    larger than the int8 history itself), rounded down to a multiple of _BLOCK_ALIGN, at least _BLOCK_ALIGN."""
    want = min(_BLOCK_BYTES // (8 * max(width, 1)), length // 8)
    return min(length, max(_BLOCK_ALIGN, want // _BLOCK_ALIGN * _BLOCK_ALIGN))


def _block_buffer(work: dict, size: int) -> np.ndarray:
    """The calling thread's float64 block buffer (the objective's tasks run on several threads)."""
    key = ("yblock", threading.get_ident())
    buf = work.get(key)
    if buf is None or buf.size < size:
        buf = work[key] = np.empty(size, dtype=np.float64)
    return buf


def _y_times(Y, A, work: dict) -> np.ndarray:
    """``Y @ A`` (float64) for a 0/1 ``Y`` held as int8, a block of rows of Y converted to float64 at a time (the
    blocks depend on Y's shape only, so the same Y gives the same numbers on every call)."""
    if Y.dtype == np.float64:
        return Y @ A
    m, n = Y.shape
    rows = _block_len(m, n)
    buf = _block_buffer(work, rows * n)
    out = np.empty((m, A.shape[1]))
    for i in range(0, m, rows):
        r = min(rows, m - i)
        blk = buf[:r * n].reshape(r, n)
        np.copyto(blk, Y[i:i + r])
        np.matmul(blk, A, out=out[i:i + r])
    return out


def _yt_times(Y, A, work: dict) -> np.ndarray:
    """``Y.T @ A`` (float64) for a 0/1 ``Y`` held as int8, a block of columns of Y converted to float64 at a time
    (each entry is still one BLAS dot product over all rows, as in the whole product)."""
    if Y.dtype == np.float64:
        return Y.T @ A
    m, n = Y.shape
    cols = _block_len(n, m)
    buf = _block_buffer(work, cols * m)
    out = np.empty((n, A.shape[1]))
    for j in range(0, n, cols):
        c = min(cols, n - j)
        blk = buf[:m * c].reshape(m, c)
        np.copyto(blk, Y[:, j:j + c])
        np.matmul(blk.T, A, out=out[j:j + c])
    return out


def _logloss_at(U, V, b, rows, cols, y) -> float:
    """Mean BCE of the model at the listed (row, col) entries."""
    if len(rows) == 0:
        return float("nan")
    x = np.einsum("ij,ij->i", U[rows], V[cols])
    if b is not None:
        x = x + b[cols]
    return float(np.mean(np.logaddexp(0.0, x) - y * x))


def _logloss_rows(U, V, b, Y, M, rows_per_block: int = 256) -> float:
    """Mean BCE of the model over the observed entries (mask ``M``) of ``Y``, a block of rows at a time (never a
    per-entry copy of the factors: at 2,212 x 12,032 and k = 16 that was two 3.4 GB arrays)."""
    total, n = 0.0, 0
    for i in range(0, Y.shape[0], rows_per_block):
        x = U[i:i + rows_per_block] @ V.T
        if b is not None:
            x += b[None, :]
        m = M[i:i + rows_per_block]
        total += float((np.logaddexp(0.0, x) - Y[i:i + rows_per_block] * x)[m].sum())
        n += int(m.sum())
    return total / n if n else float("nan")


def _fit_core(Y, M, k, weight_decay, bias, max_iter, tol, rng, init=None):
    """Fit on the non-empty rows/cols of (Y, M); return full-size U, V, b and optimiser info."""
    m, n = Y.shape
    row_ok = M.any(axis=1)
    col_ok = M.any(axis=0)
    whole = bool(row_ok.all() and col_ok.all())
    Mb = M if whole else M[np.ix_(row_ok, col_ok)]
    # the objective reads Y through matrix products, so an entry outside the mask must be 0 (held-out entries
    # keep their value in Y); a fully observed history is used as it is (no models x items copy). Y stays int8
    # (an int8 copy when held-out entries are zeroed), the mask bool: the objective multiplies by it as float32
    # without a float32 models x items copy of it
    full = bool(Mb.all())
    if full:
        Ys = Y if whole else Y[np.ix_(row_ok, col_ok)]
    else:
        Ys = np.where(Mb, Y if whole else Y[np.ix_(row_ok, col_ok)], Y.dtype.type(0))
    Ms = None if full else Mb
    ms, ns = Ys.shape
    size = (ms + ns) * k + (ns if bias else 0)
    if init is not None:
        U0, V0, b0 = init
        parts = [U0[row_ok].ravel(), V0[col_ok].ravel()]
        if bias:
            parts.append(b0[col_ok])
        theta0 = np.concatenate(parts)
    else:
        # small random init: breaks the U <-> V symmetry of the saddle at 0 without starting overconfident
        theta0 = 0.1 * rng.standard_normal(size)
        if bias:
            p = Ys.sum(0, dtype=np.float64) / (ms if Ms is None else Ms.sum(0))
            p = np.clip(p, 0.02, 0.98)
            theta0[(ms + ns) * k :] = np.log(p / (1 - p))
    pool = _thread_pool(_threads(ms * ns))
    try:
        res = minimize(
            _objective,
            theta0,
            args=(Ys, Ms, k, weight_decay, bias, {"pool": pool}),
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": int(max_iter), "ftol": tol, "gtol": tol * 1e-2, "maxcor": 20},
        )
    finally:
        if pool is not None:
            pool.shutdown(wait=True)
    Us, Vs, bs = _unpack(res.x, ms, ns, k, bias)
    U = np.zeros((m, k))
    V = np.zeros((n, k))
    U[row_ok] = Us
    V[col_ok] = Vs
    b = np.zeros(n)
    if bias:
        b[col_ok] = bs
    info = {"nit": int(res.nit), "converged": bool(res.success), "message": str(res.message)}
    return U, V, b, info


#: rows per block in new_model_loss (a multiple of _BLOCK_ALIGN): 256 x 12,032 float64 is 25 MB
_LOSS_ROWS = 256


def new_model_loss(U_fit, V, b, Y, M, reveal, rng):
    """How well the factors predict models they were not fitted on: the criterion of model-level CV.

    For each held-out model (a row of ``Y`` / mask ``M``), a random ``reveal`` share of its observed answers is
    shown one at a time to the online Laplace update (FAQ eqs. 3-5) from the prior N(mean, cov) of the fitted
    model factors ``U_fit`` (exactly what FAQ does for a new model), then the model's other observed answers are
    predicted. Returns (mean log-loss, mean squared error) over those predicted entries, pooled over rows.
    Vectorised over rows; a row with fewer observed answers simply stops updating earlier.
    """
    m, n = Y.shape
    k = V.shape[1]
    mu = U_fit.mean(axis=0)
    S0 = np.atleast_2d(np.cov(U_fit, rowvar=False, ddof=1)) if U_fit.shape[0] > 1 else np.eye(k)
    nobs = M.sum(axis=1)
    r = np.where(nobs > 1, np.maximum(1, np.round(reveal * nobs)).astype(int), 0)
    # a random order of each row's observed entries: observed first (shuffled), then unobserved. Only the first
    # r.max() positions of each row's order are used: partition, then sort those (the same positions as a full
    # argsort: the keys are distinct with probability one). The keys are drawn a block of rows at a time (the
    # generator fills row after row, so the same numbers as one rows x items draw, without that float64 array)
    rmax = int(r.max(initial=0))
    order = np.empty((m, rmax), dtype=np.intp)
    for i in range(0, m, _LOSS_ROWS):
        key = rng.random((min(_LOSS_ROWS, m - i), n))
        key[~M[i:i + _LOSS_ROWS]] += 2.0
        if 0 < rmax < n:
            part = np.argpartition(key, rmax - 1, axis=1)[:, :rmax]
            order[i:i + _LOSS_ROWS] = np.take_along_axis(part, np.argsort(np.take_along_axis(key, part, axis=1),
                                                                          axis=1), axis=1)
        else:
            order[i:i + _LOSS_ROWS] = np.argsort(key, axis=1)[:, :rmax]
        del key
    u = np.tile(mu, (m, 1))
    S = np.tile(S0, (m, 1, 1))
    rows = np.arange(m)
    for t in range(rmax):
        act = t < r
        I = order[:, t]
        vI = V[I]
        pI = expit(np.einsum("mk,mk->m", u, vI) + b[I])
        z = Y[rows, I]
        s = np.einsum("mkl,ml->mk", S, vI)
        w = pI * (1.0 - pI) * act
        den = 1.0 + w * np.einsum("mk,mk->m", vI, s)
        S -= (w / den)[:, None, None] * (s[:, :, None] * s[:, None, :])
        u += (act * (z - pI) / den)[:, None] * s
    shown = np.arange(rmax)[None, :] < r[:, None]
    # the predicted entries' losses, a block of rows at a time (blocks on BLAS's tile grid: the same logits as one
    # product), gathered in row-major order as one boolean index of the whole array gathers them
    lls, ses = [], []
    for i in range(0, m, _LOSS_ROWS):
        sl = slice(i, min(i + _LOSS_ROWS, m))
        ev = M[sl].copy()
        sh = shown[sl]
        ev[np.nonzero(sh)[0], order[sl][sh]] = False
        x = u[sl] @ V.T + b[None, :]
        y = Y[sl]
        lls.append((np.logaddexp(0.0, x) - y * x)[ev])
        ses.append(((y - expit(x)) ** 2)[ev])
    ll, se = np.concatenate(lls), np.concatenate(ses)
    if ll.size == 0:
        return float("nan"), float("nan")
    return float(ll.mean()), float(se.mean())



# ----------------------------------------------------------------------------------------------------
# cross-validation chains (one per fold and k), run in turn or on worker processes with the same numbers


def _fold_arrays(f: int, shared: dict):
    """(training Y, training mask, test rows or entries) of fold ``f``."""
    Y, M, d = shared["Y"], shared["M"], shared["data"][f]
    if shared["cv_by"] == "entries":
        Mtr = M.copy()
        Mtr[shared["obs_r"][d["te"]], shared["obs_c"][d["te"]]] = False
        return Y, Mtr
    return Y[d["tr_rows"]], M[d["tr_rows"]]


def _cv_chain(f: int, k: int, shared: dict, rng, losses_rng=None, tick=None, arrays=None) -> list[tuple[float, bool]]:
    """The fits of one (fold, k) along ``shared["lams"]`` (warm starts) -> [(held-out loss, converged)] per lambda.

    ``rng`` draws the first fit's initial values; ``losses_rng`` (one generator per lambda, default ``rng``)
    the reveal order of each model-level loss."""
    Ytr, Mtr = _fold_arrays(f, shared) if arrays is None else arrays
    d, lams, bias = shared["data"][f], shared["lams"], shared["bias"]
    out, init = [], None
    for i, lam in enumerate(lams):
        U, V, b, info = _fit_core(Ytr, Mtr, k, lam, bias, shared["max_iter"], shared["tol"], rng, init=init)
        init = (U, V, b)
        if shared["cv_by"] == "entries":
            te, obs_r, obs_c = d["te"], shared["obs_r"], shared["obs_c"]
            loss = _logloss_at(U, V, b if bias else None, obs_r[te], obs_c[te], shared["Y"][obs_r[te], obs_c[te]])
        else:
            used = Mtr.any(axis=1)
            g = rng if losses_rng is None else losses_rng[i]
            loss, _ = new_model_loss(U[used], V, b, shared["Y"][d["te_rows"]], shared["M"][d["te_rows"]],
                                     shared["reveal"], g)
        out.append((loss, info["converged"]))
        if tick is not None:
            tick(lam)
    return out


def _copy_rng(rng: np.random.Generator) -> np.random.Generator:
    g = np.random.Generator(type(rng.bit_generator)())
    g.bit_generator.state = rng.bit_generator.state
    return g


def _skip_uniforms(rng: np.random.Generator, count: int) -> None:
    """Move ``rng`` past ``count`` float64 uniforms (``rng.random(count)``: one 64-bit draw each)."""
    bg = rng.bit_generator
    if isinstance(bg, (np.random.PCG64, np.random.PCG64DXSM)):
        bg.advance(count)
        return
    for i in range(0, count, 1 << 22):
        rng.random(min(1 << 22, count - i))


def _cv_streams(chains, shared: dict, rng: np.random.Generator) -> list[tuple]:
    """For each chain, copies of ``rng`` in the states the chains run in turn would meet it (the first fit's
    initial values, then one per model-level loss); ``rng`` ends where the last chain would leave it."""
    streams = []
    M = shared["M"]
    n = M.shape[1]
    for f, k in chains:
        d = shared["data"][f]
        if shared["cv_by"] == "entries":
            Mtr = M.copy()
            Mtr[shared["obs_r"][d["te"]], shared["obs_c"][d["te"]]] = False
        else:
            Mtr = M[d["tr_rows"]]
        ms, ns = int(Mtr.any(axis=1).sum()), int(Mtr.any(axis=0).sum())
        g_init = _copy_rng(rng)
        rng.standard_normal((ms + ns) * k + (ns if shared["bias"] else 0))  # what _fit_core draws
        g_loss = None
        if shared["cv_by"] == "models":
            m_te = int(d["te_rows"].sum())
            g_loss = []
            for _ in shared["lams"]:
                g_loss.append(_copy_rng(rng))
                _skip_uniforms(rng, m_te * n)  # what new_model_loss draws
        streams.append((g_init, g_loss))
    return streams


_CV_SHARED: dict = {}


def _chain_task(args):
    i, f, k, g_init, g_loss = args
    from threadpoolctl import threadpool_limits

    global _THREADS
    _THREADS = 1  # the CV's worker processes already fill the CPUs
    with threadpool_limits(limits=1, user_api="blas"):
        return i, _cv_chain(f, k, _CV_SHARED, g_init, g_loss)


def _cv_workers(n_jobs, n_chains: int) -> int:
    """Worker processes for the CV chains: ``n_jobs`` (None = 1), at most the chains and the CPUs; 1 where a
    process cannot fork children (no "fork" start method, or inside a daemonic worker)."""
    import multiprocessing as mp
    import os

    want = 1 if n_jobs is None else int(n_jobs)
    want = min(want, n_chains, os.cpu_count() or 1)
    if want <= 1 or "fork" not in mp.get_all_start_methods() or mp.current_process().daemon:
        return 1
    return want


def _run_chains_parallel(chains, streams, shared: dict, workers: int, progress) -> list:
    """Run the chains on ``workers`` forked processes (the arrays are inherited, not copied), longest first."""
    import multiprocessing as mp

    order = sorted(range(len(chains)), key=lambda i: -chains[i][1])
    tasks = [(i, chains[i][0], chains[i][1], *streams[i]) for i in order]
    out: list = [None] * len(chains)
    _CV_SHARED.clear()
    _CV_SHARED.update(shared)
    try:
        with mp.get_context("fork").Pool(workers) as pool:
            for j, (i, res) in enumerate(pool.imap_unordered(_chain_task, tasks), 1):
                out[i] = res
                progress(chains[i][0], chains[i][1], j * len(shared["lams"]))
    finally:
        _CV_SHARED.clear()
    return out


def _row_folds(n_rows: int, cv: int, groups, rng) -> np.ndarray:
    """Fold of every row for model-level CV: whole groups go to one fold (greedy balance, random order)."""
    if groups is None:
        fold = np.empty(n_rows, dtype=int)
        fold[rng.permutation(n_rows)] = np.arange(n_rows) % cv
        return fold
    g = np.asarray([str(x) for x in groups])
    labels, inv, counts = np.unique(g, return_inverse=True, return_counts=True)
    if len(labels) < cv:
        raise AssayInputError(f"model-level CV with {cv} folds needs at least {cv} groups of models; got {len(labels)}")
    load = np.zeros(cv)
    gfold = np.empty(len(labels), dtype=int)
    perm = rng.permutation(len(labels))
    for gi in perm[np.argsort(-counts[perm], kind="stable")]:  # largest groups first, ties in random order
        f = int(np.argmin(load))
        gfold[gi] = f
        load[f] += counts[gi]
    return gfold[inv]


def default_groups(labels) -> np.ndarray | None:
    """Model families for model-level splits: the owner part of ``owner/name`` ids (a Hugging Face
    organisation), when most ids have one; otherwise None (every model its own group)."""
    labs = [str(x) for x in labels]
    if sum("/" in x for x in labs) < 0.5 * len(labs):
        return None
    return np.asarray([x.split("/", 1)[0] if "/" in x else x for x in labs])


# ----------------------------------------------------------------------------------------------------
# input validation


def _as_history(history):
    """Return (int8 codes: 0, 1, -1 for missing; row labels; col labels); raise AssayInputError.

    A DataFrame or array (0 / 1 / NaN) is validated and converted a block of rows at a time (no models x items
    float64 copy); an :class:`~assay.data.faq.FAQMatrix` (validated by ``as_matrix``; values float with NaN or int8
    codes) is taken with its ids."""
    from ..data.faq import FAQMatrix, scan_blocks, to_codes

    if isinstance(history, FAQMatrix):
        C = to_codes(history.values)
        rows, cols = list(history.rows), list(history.items)
        if C.ndim != 2:
            raise AssayInputError(f"history must be 2-D (models x items), got shape {C.shape}")
        m, n = C.shape
        if m < 2 or n < 1:
            raise AssayInputError(f"history needs at least 2 models (rows) and 1 item (column), got shape {C.shape}")
        if not (C >= 0).any():
            raise AssayInputError("history has no observed entry (all NaN)")
        return C, rows, cols
    if isinstance(history, pd.DataFrame):
        rows, cols = list(history.index), list(history.columns)
        shape = history.shape

        def block(i0, i1):
            try:
                return history.iloc[i0:i1].to_numpy(dtype=float, na_value=np.nan)
            except (TypeError, ValueError):
                for j, col in enumerate(history.columns):
                    conv = pd.to_numeric(history[col], errors="coerce")
                    bad = conv.isna() & history[col].notna()
                    if bad.any():
                        i = int(np.flatnonzero(bad.to_numpy())[0])
                        raise AssayInputError(
                            f"history cell (row {rows[i]!r}, column {col!r}) = {history.iloc[i, j]!r} is not "
                            "numeric; values must be 0, 1 or NaN (missing)"
                        ) from None
                raise
    else:
        rows = cols = None
        try:
            A = np.asarray(history)
            if A.dtype.kind not in "biuf":
                A = np.asarray(history, dtype=float)
        except (TypeError, ValueError) as e:
            raise AssayInputError(
                f"history must be a numeric models x items array or DataFrame with values 0, 1 or NaN ({e})"
            ) from None
        shape = A.shape

        def block(i0, i1):
            return A[i0:i1].astype(np.float64)
    if len(shape) != 2:
        raise AssayInputError(f"history must be 2-D (models x items), got shape {shape}")
    m, n = shape
    if m < 2 or n < 1:
        raise AssayInputError(f"history needs at least 2 models (rows) and 1 item (column), got shape {shape}")
    rows = list(range(m)) if rows is None else rows
    cols = list(range(n)) if cols is None else cols
    sc = scan_blocks(shape, block)
    if sc.bad is not None:
        i, j, v = sc.bad
        raise AssayInputError(
            f"history cell (row {rows[i]!r}, column {cols[j]!r}) [position {i}, {j}] = {float(v)!r}; "
            f"values must be 0, 1 or NaN (missing) ({sc.n_bad} bad cell(s) in total)"
        )
    if sc.n_missing == m * n:
        raise AssayInputError("history has no observed entry (all NaN)")
    return sc.codes, rows, cols


def _check_params(k, weight_decay, cv, ks, lambdas, holdout, overfit_ratio, max_iter):
    def pos_int(name, x):
        if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or x < 1:
            raise AssayInputError(f"{name} must be a positive integer, got {x!r}")

    def pos_num(name, x):
        if isinstance(x, bool) or not isinstance(x, (int, float, np.number)) or not np.isfinite(x) or x <= 0:
            raise AssayInputError(f"{name} must be a positive finite number, got {x!r}")

    pos_int("k", k)
    pos_num("weight_decay", weight_decay)
    pos_int("max_iter", max_iter)
    if cv is not None:
        if isinstance(cv, bool) or not isinstance(cv, (int, np.integer)) or cv < 2:
            raise AssayInputError(f"cv must be None or an integer number of folds >= 2, got {cv!r}")
        if len(ks) == 0 or len(lambdas) == 0:
            raise AssayInputError("ks and lambdas must be non-empty when cv is set")
        for x in ks:
            pos_int("every entry of ks", x)
        for x in lambdas:
            pos_num("every entry of lambdas", x)
    if not (0 <= holdout < 1):
        raise AssayInputError(f"holdout must be in [0, 1), got {holdout!r}")
    if not (0 < overfit_ratio < 1):
        raise AssayInputError(f"overfit_ratio must be in (0, 1), got {overfit_ratio!r}")


# ----------------------------------------------------------------------------------------------------


class FactorModel:
    """Logistic factor model sigmoid(u_i . v_j [+ b_j]) on a partially observed 0/1 history (FAQ eq. 13).

    Parameters
    ----------
    k : int, default 8
        Latent dimension (used when ``cv`` is None).
    weight_decay : float, default 1.0
        Prior precision lambda of the L2 penalty ``lambda/(2n) (||U||^2 + ||V||^2 + ||b||^2)`` added to the
        mean BCE over ``n`` observed entries (used when ``cv`` is None). Not the AdamW ``lambda`` of the paper.
    bias : bool, default False
        Add a per-item intercept b_j. The paper has none (eq. 13), hence the default.
    max_iter : int, default 500
        L-BFGS-B iteration cap; hitting it emits a :class:`FactorFitWarning`.
    tol : float, default 1e-6
        L-BFGS-B ``ftol`` (relative decrease of the objective); ``gtol`` is ``tol/100``.
    seed : int | numpy.random.Generator | None
        Seeds the initialisation, the CV folds and the holdout split. None draws an int, recorded in ``fm.seed``.
    cv : int | None, default None
        Number of CV folds. None = no CV.
    cv_by : "entries" or "models", default "entries"
        ``"entries"`` (the paper's): each fold holds out 1/cv of the observed entries and the criterion is their
        log-loss. ``"models"``: each fold holds out whole models (rows; whole ``groups`` when given to
        :meth:`fit`), the factors are fitted on the other rows, and the criterion is :func:`new_model_loss`:
        the log-loss on a held-out model's answers after FAQ's online update has seen ``reveal`` of them.
        That is the question FAQ asks of the factors (predict a model they were not fitted on), and it is what
        :func:`assay.faq.fit.default_factor_model` uses.
    reveal : float, default 0.1
        With ``cv_by="models"``: share of a held-out model's answers shown to the online update.
    ks, lambdas : sequences
        The (k, weight_decay) grid searched when ``cv`` is set. For each k the lambdas are fitted from the largest
        to the smallest, each warm-started from the previous solution (the regularisation path), which makes the
        grid cost a few full fits rather than one per candidate.
    cv_tol : float, default 1e-5
        L-BFGS-B ``ftol`` of the CV fits (early stopping: the criterion needs a good fit, not the last digit);
        the final fit uses ``tol``.
    n_jobs : int or None, default None (= 1)
        Worker processes for the CV fits (one task per fold and k, its lambdas warm-started in turn; forked,
        so the history is shared, not copied). The numbers do not depend on it: each task gets the generator
        states the fits run in turn would have used. 1 where the platform cannot fork (and inside a daemonic
        worker process).
    one_se : bool, default True
        Pick the simplest setting (smallest k, then largest lambda) whose mean held-out log-loss is within
        one standard error (of the best setting's fold losses, ddof=1) of the best; False = plain argmin.
    holdout : float, default 0.1
        Without CV: fraction of observed entries held out to measure ``heldout_logloss_`` (0 disables, with a
        warning). The final model is refitted on all entries.
    overfit_ratio : float, default 0.5
        Guard: warn (``OverfitWarning``) when ``train_logloss_ / heldout_logloss_`` is below this.

    Learned attributes
    ------------------
    ``U_`` (models x k_), ``V_`` (items x k_), ``b_`` (items; zeros without bias), ``k_``, ``weight_decay_``,
    ``train_logloss_``, ``heldout_logloss_``, ``baseline_logloss_`` (per-item-mean predictor on the same
    held-out entries), ``overfit_warning_``, ``cv_results_`` (DataFrame or None), ``prior_mean_``,
    ``prior_cov_``, ``empty_rows_``, ``empty_cols_``, ``n_iter_``, ``converged_``, ``row_labels_``,
    ``col_labels_``, ``n_observed_``. With ``cv``, a best setting on the complex edge of the grid (largest k or
    smallest lambda) emits a :class:`FactorFitWarning`.
    """

    def __init__(
        self,
        k: int = 8,
        weight_decay: float = 1.0,
        bias: bool = False,
        max_iter: int = 500,
        tol: float = 1e-6,
        seed=None,
        cv: int | None = None,
        ks: Sequence[int] = (1, 2, 3, 5, 8, 16, 32),
        lambdas: Sequence[float] = (0.1, 1.0, 10.0, 100.0),
        one_se: bool = True,
        holdout: float = 0.1,
        overfit_ratio: float = 0.5,
        cv_by: str = "entries",
        reveal: float = 0.1,
        cv_tol: float = 1e-5,
        n_jobs: int | None = None,
    ):
        self.k = k
        self.weight_decay = weight_decay
        self.bias = bias
        self.max_iter = max_iter
        self.tol = tol
        # the seed rule (assay.seeds): None becomes a recorded int here, so a fit can be repeated from fm.seed;
        # an int keeps the stream of np.random.default_rng(int); a Generator is used as given
        if not isinstance(seed, np.random.Generator):
            from ..seeds import resolve_seed

            seed = resolve_seed(seed).recorded
        self.seed = seed
        self.cv = cv
        self.ks = ks
        self.lambdas = lambdas
        self.one_se = one_se
        self.holdout = holdout
        self.overfit_ratio = overfit_ratio
        self.cv_by = cv_by
        self.reveal = reveal
        self.cv_tol = cv_tol
        self.n_jobs = n_jobs

    # -- fitting -------------------------------------------------------------------------------------

    def fit(self, history, *, groups=None, progress=None) -> "FactorModel":
        """Fit on the observed entries of ``history`` (see :meth:`_fit`). BLAS runs single-threaded meanwhile: the
        products here are tall and thin (k <= 32 columns), where OpenBLAS threads cost more than they give; the
        objective shares its own work out over threads (:func:`_objective`)."""
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=1, user_api="blas"):
            return self._fit(history, groups=groups, progress=progress)

    def _fit(self, history, *, groups=None, progress=None) -> "FactorModel":
        """Fit on the observed entries of ``history`` (models x items; 0/1, NaN = missing). Returns self.

        history : a DataFrame (row and column labels kept) or array of 0 / 1 / NaN, or an
            :class:`~assay.data.faq.FAQMatrix` (``as_matrix(table, "history", codes=True)``: int8 codes, -1 =
            missing, the form FAQ holds a history in; its ids are the labels). The fit holds the history as int8.

        groups : with ``cv_by="models"``, one label per row (a model family); whole families go to one fold, so
            the criterion measures prediction for a family the fit has not seen. ``"auto"``: the ``owner`` part
            of ``owner/name`` row labels (see :func:`default_groups`). None: every model its own group.
        progress : ``progress(done, total, info)`` after each CV fit (``info`` names fold and candidate) and
            after the final fit.
        """
        _check_params(self.k, self.weight_decay, self.cv, self.ks, self.lambdas, self.holdout,
                      self.overfit_ratio, self.max_iter)
        if self.cv_by not in ("entries", "models"):
            raise AssayInputError(f"cv_by must be 'entries' or 'models'; got {self.cv_by!r}")
        if not (isinstance(self.reveal, (int, float, np.floating)) and 0 < self.reveal < 1):
            raise AssayInputError(f"reveal must be in (0, 1); got {self.reveal!r}")
        Y, M, rng = self._read_history(history)
        nobs, obs_r, obs_c = self._observed_entries(M)

        self.cv_results_ = None
        if self.cv is not None:
            self._choose_by_cv(Y, M, obs_r, obs_c, groups, rng, progress)
            init = None
        else:
            self.k_ = int(self.k)
            self.weight_decay_ = float(self.weight_decay)
            init = self._measure_holdout(Y, M, obs_r, obs_c, nobs, rng)

        U, V, b = self._final_fit(Y, M, rng, init, progress)
        self.train_logloss_ = _logloss_rows(U, V, b if self.bias else None, Y, M)
        self._guard()
        used = np.ones(U.shape[0], dtype=bool)
        used[self.empty_rows_] = False
        Uu = U[used]
        self.prior_mean_ = Uu.mean(axis=0)
        self.prior_cov_ = np.atleast_2d(np.cov(Uu, rowvar=False, ddof=1))
        return self

    def _read_history(self, history):
        """The history as (Y: 0/1 int8 with 0 at missing cells, M: observed mask, the fit's generator); records the
        row and column labels."""
        H, self.row_labels_, self.col_labels_ = _as_history(history)
        rng = self.seed if isinstance(self.seed, np.random.Generator) else np.random.default_rng(self.seed)
        M = H >= 0
        # Y (0/1, int8) is only read: a complete history's codes are used as they are, else one int8 copy with 0
        # at the missing cells. No models x items float64 array is held: the objective's matrix products take Y
        # a block at a time (_y_times, _yt_times), everything else reads it as integers
        Y = H if M.all() else np.maximum(H, np.int8(0))
        del H
        return Y, M, rng

    def _observed_entries(self, M):
        """(number of observed entries, their rows, their columns) and the empty rows and columns (warned about); the
        positions are None where no entries are split."""
        nobs = int(M.sum())
        # the (row, column) of every observed entry (two int64 arrays, 16 bytes an entry) only where entries are
        # split (entry-level CV, the holdout of a fit without CV)
        split_entries = self.cv_by == "entries" if self.cv is not None else self.holdout > 0
        obs_r, obs_c = np.nonzero(M) if split_entries else (None, None)
        self.n_observed_ = nobs
        self.empty_rows_ = np.flatnonzero(~M.any(axis=1))
        self.empty_cols_ = np.flatnonzero(~M.any(axis=0))
        if self.empty_rows_.size or self.empty_cols_.size:
            warnings.warn(
                f"history has {self.empty_rows_.size} model row(s) and {self.empty_cols_.size} item column(s) with "
                "no observation; their factors are set to the prior mean 0 and empty rows are excluded from the prior",
                FactorFitWarning,
                stacklevel=3,
            )
        if M.any(axis=1).sum() < 2:
            raise AssayInputError("history needs at least 2 model rows with an observed entry to estimate the prior")
        return nobs, obs_r, obs_c

    def _choose_by_cv(self, Y, M, obs_r, obs_c, groups, rng, progress) -> None:
        """Cross-validate the (k, lambda) grid and record the chosen setting, its held-out loss and the CV table."""
        cvr, self.baseline_logloss_ = self._cross_validate(Y, M, obs_r, obs_c, groups, rng, progress)
        best = int(cvr["heldout_logloss"].idxmin())
        if self.one_se:
            cut = cvr.loc[best, "heldout_logloss"] + cvr.loc[best, "se"]
            ok = cvr[cvr["heldout_logloss"] <= cut]
            chosen = ok.sort_values(["k", "lambda"], ascending=[True, False]).index[0]
        else:
            chosen = best
        cvr["selected"] = cvr.index == chosen
        self.cv_results_ = cvr
        self.k_ = int(cvr.loc[chosen, "k"])
        self.weight_decay_ = float(cvr.loc[chosen, "lambda"])
        self.heldout_logloss_ = float(cvr.loc[chosen, "heldout_logloss"])
        # the best setting on the complex edge of the grid means the grid may be too narrow
        best_k, best_lam = int(cvr.loc[best, "k"]), float(cvr.loc[best, "lambda"])
        if (len(self.ks) > 1 and best_k == max(self.ks)) or (len(self.lambdas) > 1 and best_lam == min(self.lambdas)):
            warnings.warn(
                f"the best CV setting (k={best_k}, lambda={best_lam:g}) is on the edge of the grid "
                "(largest k or smallest lambda); consider extending ks / lambdas",
                FactorFitWarning,
                stacklevel=3,
            )

    def _measure_holdout(self, Y, M, obs_r, obs_c, nobs, rng):
        """Without CV: fit without a random holdout share of the entries and record its held-out and baseline
        losses (NaN without a holdout); returns that fit's factors to warm-start the final fit, or None."""
        init = None
        if self.holdout > 0:
            te = rng.random(nobs) < self.holdout
            Mtr = M.copy()
            Mtr[obs_r[te], obs_c[te]] = False
            U, V, b, _ = _fit_core(Y, Mtr, self.k_, self.weight_decay_, self.bias, self.max_iter, self.tol, rng)
            self.heldout_logloss_ = _logloss_at(U, V, b if self.bias else None, obs_r[te], obs_c[te], Y[obs_r[te], obs_c[te]])
            self.baseline_logloss_ = self._item_mean_logloss(Y, M, obs_r, obs_c, te)
            init = (U, V, b)
        else:
            self.heldout_logloss_ = float("nan")
            self.baseline_logloss_ = float("nan")
        return init

    def _final_fit(self, Y, M, rng, init, progress):
        """Fit the chosen setting on every observed entry and record the factors and the optimiser's outcome
        (warned about when it did not converge); returns (U, V, b)."""
        U, V, b, info = _fit_core(Y, M, self.k_, self.weight_decay_, self.bias, self.max_iter, self.tol, rng, init=init)
        if progress is not None:
            total = self.cv * len(self.ks) * len(self.lambdas) + 1 if self.cv is not None else 1
            progress(total, total, f"final fit k={self.k_}, lambda={self.weight_decay_:g}")
        self.U_, self.V_, self.b_ = U, V, b
        self.n_iter_ = info["nit"]
        self.converged_ = info["converged"]
        if not self.converged_:
            warnings.warn(
                f"L-BFGS-B stopped without converging after {self.n_iter_} iterations ({info['message']}); "
                "increase max_iter",
                FactorFitWarning,
                stacklevel=3,
            )
        return U, V, b

    def _cross_validate(self, Y, M, obs_r, obs_c, groups, rng, progress):
        """Every (k, lambda) on every fold -> (cv_results DataFrame, per-item-mean baseline log-loss)."""
        cv, nobs = int(self.cv), int(M.sum())
        ks = [int(k) for k in self.ks]
        lams = sorted((float(x) for x in self.lambdas), reverse=True)  # regularisation path: warm starts
        total = cv * len(ks) * len(lams) + 1
        done = 0
        if self.cv_by == "entries":
            if nobs < 2 * cv:
                raise AssayInputError(f"too few observed entries ({nobs}) for cv={cv} folds")
            fold = np.empty(nobs, dtype=int)
            fold[rng.permutation(nobs)] = np.arange(nobs) % cv
        else:
            g = default_groups(self.row_labels_) if isinstance(groups, str) and groups == "auto" else groups
            if g is not None:
                g = np.asarray(g)
                if g.shape != (Y.shape[0],):
                    raise AssayInputError(f"groups must give one label per history row ({Y.shape[0]}); got shape {g.shape}")
            has = M.any(axis=1)
            if int(has.sum()) < 2 * cv:
                raise AssayInputError(f"model-level CV with {cv} folds needs at least {2 * cv} models with answers; "
                                      f"the history has {int(has.sum())}")
            fold_r = _row_folds(Y.shape[0], cv, g, rng)
        losses: dict[tuple[int, float], list[float]] = {(k, lam): [] for k in ks for lam in lams}
        not_conv: dict[tuple[int, float], int] = {(k, lam): 0 for k in ks for lam in lams}
        base = []
        # one chain per (fold, k): the fits along lambda, warm-started. The generator is used in this order
        # (the initial values of each chain's first fit, then, with cv_by="models", the reveal order of each
        # loss), so the chains can run in parallel with the same numbers: each gets the generator states it
        # would have met in turn (_cv_streams)
        chains, data = [], []
        for f in range(cv):
            if self.cv_by == "entries":
                te = fold == f
                base.append(self._item_mean_logloss(Y, M, obs_r, obs_c, te))
                data.append({"te": te})
            else:
                tr_rows, te_rows = fold_r != f, fold_r == f
                Ytr, Mtr = Y[tr_rows], M[tr_rows]
                cnt = Mtr.sum(axis=0)
                pj = np.where(cnt > 0, Ytr.sum(axis=0) / np.maximum(cnt, 1), Ytr.sum() / max(Mtr.sum(), 1))
                pj = np.clip((pj * cnt + 0.5) / (cnt + 1.0), 1e-6, 1 - 1e-6)
                # the per-item-mean baseline's losses on the test rows, a block of rows at a time (no test rows x
                # items float64 arrays), gathered in the order one boolean index of the whole would give
                te_idx, lp, l1p, parts = np.flatnonzero(te_rows), np.log(pj), np.log1p(-pj), []
                for i in range(0, te_idx.size, _LOSS_ROWS):
                    yt, mt = Y[te_idx[i:i + _LOSS_ROWS]], M[te_idx[i:i + _LOSS_ROWS]]
                    parts.append((-(yt * lp + (1 - yt) * l1p))[mt])
                base.append(float(np.mean(np.concatenate(parts) if parts else np.empty(0))))
                del Ytr, parts
                data.append({"tr_rows": tr_rows, "te_rows": te_rows})
            chains += [(f, k) for k in ks]
        shared = {"Y": Y, "M": M, "obs_r": obs_r, "obs_c": obs_c, "data": data, "lams": lams, "bias": self.bias,
                  "max_iter": self.max_iter, "tol": self.cv_tol, "cv_by": self.cv_by, "reveal": self.reveal}
        workers = _cv_workers(self.n_jobs, len(chains))
        if workers > 1:
            streams = _cv_streams(chains, shared, rng)
            out = _run_chains_parallel(chains, streams, shared, workers,
                                       lambda f, k, j: None if progress is None else progress(
                                           j, total, f"fold {f + 1}/{cv}, k={k}, all lambdas"))
        else:
            out = []
            for f, k in chains:
                def tick(lam, f=f, k=k):
                    nonlocal done
                    done += 1
                    if progress is not None:
                        progress(done, total, f"fold {f + 1}/{cv}, k={k}, lambda={lam:g}")
                out.append(_cv_chain(f, k, shared, rng, None, tick))
        for (f, k), res in zip(chains, out):
            for lam, (loss, conv) in zip(lams, res):
                losses[(k, lam)].append(loss)
                not_conv[(k, lam)] += not conv
        records = []
        for k in ks:
            for lam in sorted(lams):
                ls = np.asarray(losses[(k, lam)])
                records.append({"k": k, "lambda": lam, "heldout_logloss": float(ls.mean()),
                                "se": float(ls.std(ddof=1) / np.sqrt(cv)), "n_not_converged": int(not_conv[(k, lam)])})
        return pd.DataFrame.from_records(records), float(np.mean(base))

    @staticmethod
    def _item_mean_logloss(Y, M, obs_r, obs_c, te) -> float:
        Mtr = M.copy()
        Mtr[obs_r[te], obs_c[te]] = False
        cnt = Mtr.sum(0)
        glob = (Y * Mtr).sum() / max(Mtr.sum(), 1)
        p = np.where(cnt > 0, (Y * Mtr).sum(0) / np.maximum(cnt, 1), glob)
        # add-one smoothing so a column observed all-0 / all-1 in training does not give infinite loss
        p = (p * cnt + 0.5) / (cnt + 1.0)
        y = Y[obs_r[te], obs_c[te]]
        pj = p[obs_c[te]]
        return float(np.mean(-(y * np.log(pj) + (1 - y) * np.log1p(-pj))))

    def _guard(self) -> None:
        tr, ho, base = self.train_logloss_, self.heldout_logloss_, self.baseline_logloss_
        self.overfit_warning_ = False
        if not np.isfinite(ho):
            warnings.warn(
                f"no held-out entries (cv=None, holdout=0): overfitting cannot be checked; train log-loss {tr:.4f}",
                FactorFitWarning,
                stacklevel=3,
            )
            return
        reasons = []
        if tr / ho < self.overfit_ratio:
            reasons.append(f"train/held-out ratio {tr / ho:.2f} < {self.overfit_ratio}")
        if np.isfinite(base) and ho > base:
            reasons.append(f"held-out log-loss above the per-item-mean baseline {base:.4f}")
        if reasons:
            self.overfit_warning_ = True
            warnings.warn(
                f"factor model (k={self.k_}, weight_decay={self.weight_decay_:g}) looks overfit: train log-loss "
                f"{tr:.4f}, held-out {ho:.4f} ({'; '.join(reasons)}); use cv= or a larger weight_decay / smaller k",
                OverfitWarning,
                stacklevel=3,
            )

    # -- accessors -----------------------------------------------------------------------------------

    def _check_fitted(self):
        if not hasattr(self, "U_"):
            raise AssayInputError("this FactorModel is not fitted yet; call fit(history) first")

    def predict_proba(self, rows=None) -> np.ndarray:
        """P(correct) = sigmoid(u_i . v_j + b_j) for the given row positions (all rows if None): rows x items."""
        self._check_fitted()
        U = self.U_ if rows is None else self.U_[np.atleast_1d(np.asarray(rows))]
        return expit(U @ self.V_.T + self.b_[None, :])

    def prior_(self):
        """(mean, covariance) of the fitted model factors u_i: the FAQ Gaussian prior for a new model (Sec. 3)."""
        self._check_fitted()
        return self.prior_mean_, self.prior_cov_

    def fingerprint(self) -> str:
        """A short hash of what FAQ uses from the fit (question factors, offsets, prior, item ids): two fits with
        the same fingerprint drive FAQ identically. Recorded in live runs, so a resume with other factors is refused."""
        import hashlib

        self._check_fitted()
        h = hashlib.sha256()
        for a in (self.V_, self.b_, self.prior_mean_, self.prior_cov_):
            h.update(np.ascontiguousarray(a, dtype=np.float64).tobytes())
        h.update("\x1f".join(str(c) for c in self.col_labels_).encode())
        return h.hexdigest()[:16]

    def summary(self) -> dict:
        """The fit's choices and losses as a plain dict."""
        self._check_fitted()
        return {
            "k": self.k_, "weight_decay": self.weight_decay_, "bias": self.bias,
            "train_logloss": self.train_logloss_, "heldout_logloss": self.heldout_logloss_,
            "baseline_logloss": self.baseline_logloss_, "overfit_warning": self.overfit_warning_,
            "n_observed": self.n_observed_, "n_iter": self.n_iter_, "converged": self.converged_,
        }
