"""What FAQ will do for a new model, measured on the user's own history before any question is asked.

The history's models are cut into model-level folds (whole families, the ``owner/`` of ``owner/name`` ids,
as in :func:`assay.faq.protocol.model_splits`). For each fold, factors with the fitted (k, lambda) are refitted on
the other folds, and FAQ is run, at the user's budget and with the user's settings, on the fold's complete rows
(models whose whole row is known, so their accuracy is). Each run gives the studentised error

    T = (theta_hat - theta) / se

of the fixed-budget interval, whether the fallback test sent the model to uniform sampling, and the width a
uniform sample of the same size would have had. From these runs (:class:`Calibration`):

* **the floor of the standard error** :meth:`Calibration.floor` (the default ``variance="conservative"``): the
  interval of a new model that did not fall back is theta_hat +- t se with se = max(se_increments,
  lambda se_model), t the Student t quantile with n_eff - 1 degrees of freedom. The increments' variance is
  model-free (it estimates Var(theta_hat) whether or not the answers follow the factor model: the martingale
  differences of :mod:`assay.faq.core`); the working model's variance is a floor that keeps the interval from
  collapsing while the rare heavily weighted surprises have not been seen yet, and its right height is what
  the history can tell: lambda is the conformal quantile of the runs' scores s = 0 when the increments'
  Student t interval covers, else |theta_hat - theta| / (t se_model), i.e. the smallest lambda that covers
  each run. The smallest lambda whose share of held-out runs with s <= lambda is at least
  (1 - alpha)(1 + 1/m), m the number of held-out models. Why it holds: the event {s <= lambda} is the
  event that the rule covers, and if the new model's family is exchangeable with the history's families, its
  s is exchangeable with the held-out ones, so the split-conformal argument (Vovk et al. 2005; Lei et al.
  2018, Thm 2.1) gives P(s_new <= lambda) >= 1 - alpha in finite samples (exactly with one run per held-out
  model; with several seeds per model the share is an average of per-model coverages, and the (1 + 1/m)
  factor is the same finite-sample margin over m models). It is approximate in one more way: the held-out
  runs' factors are fitted on the other folds only, a smaller history than the final fit's, so they are
  slightly worse predictors and lambda slightly larger than it needs to be.

  Why the floor and not the critical value: on leaderboard family splits the floor with Student t
  over-covers (96-97% where 95% was promised: the maximum of two nearly unbiased variance estimates is biased
  up), so lambda < 1 there. A first version calibrated the critical value c of |T| = |theta_hat - theta| / se
  instead; c came out below Student t's quantile and also shrank the model-free part of the interval, which
  under-covered on models unlike the history (0.932-0.949 on the leaderboard's 7B models with an 8B history,
  docs/faq.md; there the increments' Student t interval alone covers as much as the floored one, the
  ``faq:increments|t`` rows, so it is the increments that carry the interval).
  Calibrating the floor leaves the model-free part alone: the history can only lower (or raise) the working
  model's part. For ``variance="increments"`` or ``"model"`` the critical value c of |T| is calibrated as
  before (:meth:`Calibration.crit`).
* **the expected coverage** :meth:`Calibration.expected_coverage`: cross-fitted, each fold's runs scored
  with the rule (lambda, or c) learnt on the other folds (an honest estimate of what the new model gets).
* **the expected saving** :meth:`Calibration.expected_saving`: (mean width of uniform sampling / mean width
  of FAQ)^2 per (fold, seed), averaged: how many uniformly sampled questions each FAQ question is worth.

A new model that falls back (its answers do not follow the history: the exchangeability above is what fails
for it) is not given the calibrated rule: its interval keeps the Student t quantile of the conservative
standard error.

The runs are cached beside the fitted factors (``factor_cache_dir()``), keyed by the history, the budget
and the settings, so a second run on the same history knows all this at once.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from ..errors import AssayInputError
from . import baselines as bl
from .core import FAQParams, critical_value, run_faq
from .factor import FactorModel, default_groups

__all__ = ["Calibration", "calibrate", "MIN_MODELS"]

#: fewer held-out complete models than this: no calibration (the conformal quantile needs m >= 1/alpha - 1, and
#: the saving estimate a few dozen models to mean anything)
MIN_MODELS = 20
_VERSION = "faq-calibration-2"


@dataclass
class Calibration:
    """Held-out runs of FAQ at one budget on the history's own models (module docstring). Arrays over runs."""

    n_b: int
    N: int
    fold: np.ndarray  # (R,) held-out fold of the run
    seed: np.ndarray  # (R,) seed index
    model: np.ndarray  # (R,) held-out model (row of the history)
    theta: np.ndarray  # (R,) its true accuracy
    est: np.ndarray  # (R,) theta_hat
    se: dict  # variance name -> (R,) standard errors
    neff: np.ndarray  # (R,) 1 / sum W^2 (the Student t degrees of freedom + 1)
    fell_back: np.ndarray  # (R,) bool: the fallback test sent the run to uniform sampling
    unif_k: np.ndarray  # (R,) correct answers of a uniform sample of n_b questions of the same model (same seed)

    @property
    def n_models(self) -> int:
        return int(np.unique(self.model).size)

    def _t(self, variance: str) -> np.ndarray:
        if variance not in self.se:
            raise AssayInputError(f"no calibration for variance {variance!r}")
        se = self.se[variance]
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(se > 0, np.abs(self.est - self.theta) / se, np.where(self.est == self.theta, 0.0, np.inf))

    @staticmethod
    def _quantile(abs_t: np.ndarray, alpha: float, m: int) -> float:
        level = (1.0 - alpha) * (1.0 + 1.0 / max(m, 1))
        if abs_t.size == 0 or level > 1.0:
            return float("nan")
        a = np.sort(abs_t)
        k = int(np.ceil(level * a.size)) - 1
        return float(a[min(max(k, 0), a.size - 1)])

    def _keep(self, exclude_fold: int | None):
        keep = ~self.fell_back
        if exclude_fold is not None:
            keep &= self.fold != exclude_fold
        return keep, int(np.unique(self.model[keep]).size)

    def crit(self, alpha: float, variance: str = "increments", *, exclude_fold: int | None = None) -> float:
        """The calibrated critical value c of ``variance`` for models that did not fall back. NaN when the runs are
        too few, and for ``"conservative"``, whose floor is calibrated instead (:meth:`floor`)."""
        if variance == "conservative":
            return float("nan")
        keep, m = self._keep(exclude_fold)
        if m < MIN_MODELS:
            return float("nan")
        return self._quantile(self._t(variance)[keep], alpha, m)

    def floor(self, alpha: float, *, exclude_fold: int | None = None) -> float:
        """The calibrated multiplier lambda of the working model's standard error in the ``conservative`` rule
        theta_hat +- t se, se = max(se_increments, lambda se_model) (module docstring; NaN when the runs are too
        few). A run's score is the smallest lambda that covers it: 0 when the increments' Student t interval
        covers it, else |theta_hat - theta| / (t se_model)."""
        keep, m = self._keep(exclude_fold)
        if m < MIN_MODELS or "increments" not in self.se or "model" not in self.se:
            return float("nan")
        t_crit = np.asarray(critical_value(alpha, self.neff, "t"), dtype=float)
        err = np.abs(self.est - self.theta)
        inc, mod = self.se["increments"], self.se["model"]
        with np.errstate(divide="ignore", invalid="ignore"):
            score = np.where(err <= t_crit * inc, 0.0, np.where(mod > 0, err / (t_crit * mod), np.inf))
        return self._quantile(score[keep], alpha, m)

    def learnt(self, alpha: float, variance: str = "conservative", *, exclude_fold: int | None = None) -> dict:
        """What the history calibrates for ``variance``: ``{"crit": c, "floor": lambda}``, NaN where not learnt."""
        if variance == "conservative":
            return {"crit": float("nan"), "floor": self.floor(alpha, exclude_fold=exclude_fold)}
        return {"crit": self.crit(alpha, variance, exclude_fold=exclude_fold), "floor": float("nan")}

    def calibrated(self, alpha: float, variance: str = "conservative") -> bool:
        """Whether the history could calibrate the interval of ``variance`` (enough complete held-out models)."""
        got = self.learnt(alpha, variance)
        return bool(np.isfinite(got["crit"]) or np.isfinite(got["floor"]))

    def intervals(self, alpha: float, variance: str = "conservative", *, cross: bool = True):
        """(lo, hi) of every held-out run under the calibrated rule (``cross``: each fold with the rule learnt on
        the other folds); a run that fell back, or any run when too few are held out, keeps Student t."""
        crit = np.asarray(critical_value(alpha, self.neff, "t"), dtype=float).copy()
        if variance == "conservative":
            se = np.maximum(self.se["increments"], self.se["model"])
        else:
            se = np.array(self.se[variance], dtype=float)
        for f in np.unique(self.fold):
            got = self.learnt(alpha, variance, exclude_fold=int(f) if cross else None)
            sel = (self.fold == f) & ~self.fell_back
            if np.isfinite(got["floor"]):
                se[sel] = np.maximum(self.se["increments"][sel], got["floor"] * self.se["model"][sel])
            elif np.isfinite(got["crit"]):
                crit[sel] = got["crit"]
        return np.clip(self.est - crit * se, 0, 1), np.clip(self.est + crit * se, 0, 1)

    def expected_coverage(self, alpha: float, variance: str = "conservative") -> float:
        lo, hi = self.intervals(alpha, variance, cross=True)
        return float(np.mean((lo <= self.theta) & (self.theta <= hi)))

    def expected_saving(self, alpha: float, variance: str = "conservative") -> float:
        """(mean uniform width / mean FAQ width)^2 per (fold, seed), averaged over them."""
        lo, hi = self.intervals(alpha, variance, cross=False)
        ulo, uhi = bl.wilson_fpc(self.unif_k, self.n_b, self.N, alpha)
        ratios = []
        for f in np.unique(self.fold):
            for s in np.unique(self.seed):
                sel = (self.fold == f) & (self.seed == s)
                w = float(np.mean(hi[sel] - lo[sel]))
                if sel.any() and w > 0:
                    ratios.append((float(np.mean(uhi[sel] - ulo[sel])) / w) ** 2)
        return float(np.mean(ratios)) if ratios else float("nan")

    def fallback_rate(self) -> float:
        return float(np.mean(self.fell_back)) if self.fell_back.size else float("nan")

    def summary(self, alpha: float, variance: str = "conservative") -> dict:
        """What a user is told before any query (plain numbers; NaN where the history cannot say)."""
        return {"budget": int(self.n_b), "held_out_models": self.n_models, "runs": int(self.est.size),
                **self.learnt(alpha, variance), "expected_coverage": self.expected_coverage(alpha, variance),
                "expected_saving": self.expected_saving(alpha, variance), "fallback_rate": self.fallback_rate()}

    # -- cache -------------------------------------------------------------------------------------------
    _ARRAYS = ("fold", "seed", "model", "theta", "est", "neff", "fell_back", "unif_k")

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        arrays = {k: np.asarray(getattr(self, k)) for k in self._ARRAYS}
        arrays.update({f"se__{k}": np.asarray(v) for k, v in self.se.items()})
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")  # one per process: two may write the same entry
        with open(tmp, "wb") as f:
            np.savez_compressed(f, meta=np.array(json.dumps({"n_b": self.n_b, "N": self.N})), **arrays)
        os.chmod(tmp, 0o600)  # beside the fitted factors, as private as they are
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path) -> "Calibration":
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(str(z["meta"]))
            kw = {k: z[k] for k in cls._ARRAYS}
            se = {k[4:]: z[k] for k in z.files if k.startswith("se__")}
        return cls(n_b=int(meta["n_b"]), N=int(meta["N"]), se=se, **kw)


def _folds(rows: Sequence[str], n_folds: int) -> np.ndarray:
    from .factor import _row_folds

    groups = default_groups(rows)
    if groups is not None and np.unique(groups).size < n_folds:
        groups = None
    return _row_folds(len(rows), n_folds, groups, np.random.default_rng(0))


_FOLD_FITS: dict = {}  # (history, k, lambda, bias, fold) -> fitted FactorModel: one fit per fold for every budget


def _fold_fit(H, train, fm: FactorModel, hkey: str, f: int) -> FactorModel:
    """Factors of ``fm``'s (k, lambda) fitted on the rows ``train`` of ``H``, kept in memory for the other budgets
    of the same history (a protocol or study calibrates every budget on the same folds)."""
    key = (hkey, int(fm.k_), float(fm.weight_decay_), bool(fm.bias), int(f))
    if key not in _FOLD_FITS:
        fmf = FactorModel(k=fm.k_, weight_decay=fm.weight_decay_, bias=fm.bias, max_iter=fm.max_iter, tol=fm.cv_tol,
                          holdout=0, seed=0)
        from ..data.faq import FAQMatrix

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            # int8 codes with the positional labels a plain array gets (the fold fits' fingerprints unchanged)
            fmf.fit(FAQMatrix(H[train], list(range(int(train.sum()))), list(range(H.shape[1]))))
        if len(_FOLD_FITS) >= 32:
            _FOLD_FITS.pop(next(iter(_FOLD_FITS)))
        _FOLD_FITS[key] = fmf
    return _FOLD_FITS[key]


def calibrate(H: np.ndarray, rows: Sequence[str], fm: FactorModel, n_b: int, params: FAQParams, *, seeds: int = 2,
              max_models: int = 300, n_folds: int = 3,
              progress: Callable[[int, int], None] | None = None) -> Calibration | None:
    """Run FAQ at budget ``n_b`` on held-out families of the history ``H``.

    The factors of ``fm``'s (k, lambda) are refitted without each fold. The history is held as int8. At most
    ``max_models`` complete held-out rows (a random subset, fixed by the history), ``seeds`` runs each; every run is
    paired with a uniform sample of the same size (:func:`assay.faq.baselines.uniform_mean`).

    Parameters
    ----------
    H : ndarray
        The history, models x items: NaN = missing, or int8 codes with -1 = missing as ``as_matrix(..., codes=True)``
        gives them; the columns in the order of ``fm``'s items.
    rows : sequence of str
        The history's model ids (their families decide the folds).
    fm : FactorModel
        The factor model fitted on the whole history.
    n_b : int
        The budget in questions.
    params : FAQParams
        FAQ's sampling parameters.
    seeds : int, default 2
        Runs per held-out model.
    max_models : int, default 300
        Most complete held-out rows used.
    n_folds : int, default 3
        Model-level folds.
    progress : callable, optional
        ``progress(done, total)`` as the (fold, seed) runs complete.

    Returns
    -------
    Calibration or None
        The held-out runs; None when the history has fewer than :data:`MIN_MODELS` complete rows or too few models
        for the folds (or ``n_b`` covers the bank).
    """
    from ..data.faq import int8_bytes, to_codes

    H = np.asarray(H)
    H = to_codes(H if H.dtype.kind in "biuf" else H.astype(float))
    m, N = H.shape
    complete = (H >= 0).all(axis=1)
    if complete.sum() < MIN_MODELS or m < 2 * n_folds or n_b >= N:
        return None
    fold = _folds(rows, n_folds)
    hkey = hashlib.sha256(int8_bytes(H) + repr(H.shape).encode()
                          + "\x1f".join(map(str, rows)).encode()).hexdigest()
    rng = np.random.default_rng(0)
    pick = np.flatnonzero(complete)
    if pick.size > max_models:
        pick = np.sort(rng.choice(pick, max_models, replace=False))
    out = {k: [] for k in ("fold", "seed", "model", "theta", "est", "neff", "fell_back", "unif_k")}
    ses: dict[str, list] = {}
    done, total = 0, n_folds * seeds
    for f in range(n_folds):
        new = pick[fold[pick] == f]
        train = fold != f
        if new.size == 0 or train.sum() < 2:
            done += seeds
            continue
        fmf = _fold_fit(H, train, fm, hkey, f)
        Z = H[new]  # complete rows: int8 0/1
        theta = Z.mean(axis=1)
        for s in range(seeds):
            ss = np.random.SeedSequence([f, s, int(n_b)])
            r_ss, u_ss = ss.spawn(2)
            r = run_faq(fmf.V_, fmf.prior_mean_, fmf.prior_cov_, Z, int(n_b), rng=np.random.default_rng(r_ss),
                        params=params, b=fmf.b_ if fmf.bias else None)
            u = bl.uniform_mean(Z, int(n_b), rng=np.random.default_rng(u_ss))
            W = r.weights / r.weights.sum()
            out["fold"].append(np.full(new.size, f))
            out["seed"].append(np.full(new.size, s))
            out["model"].append(new)
            out["theta"].append(theta)
            out["est"].append(r.estimate)
            out["neff"].append(np.full(new.size, 1.0 / float((W**2).sum())))
            out["fell_back"].append(r.fell_back > 0)
            out["unif_k"].append(np.round(u.estimate * n_b))
            for k, v in r.ses.items():
                ses.setdefault(k, []).append(v)
            done += 1
            if progress is not None:
                progress(done, total)
    if not out["est"]:
        return None
    cal = Calibration(n_b=int(n_b), N=N, se={k: np.concatenate(v) for k, v in ses.items()},
                      **{k: np.concatenate(v) for k, v in out.items()})
    if cal.n_models < MIN_MODELS:
        return None
    return cal


def cache_key(history_key: str, n_b: int, params: FAQParams, seeds: int, max_models: int) -> str:
    h = hashlib.sha256()
    h.update(f"{_VERSION}|{history_key}|{n_b}|{seeds}|{max_models}|".encode())
    h.update(json.dumps(params.to_dict(), sort_keys=True).encode())
    return h.hexdigest()[:24]


def cached_calibration(H, rows, fm: FactorModel, history_key: str | None, n_b: int, params: FAQParams, *,
                       cache_dir: Path | None, seeds: int = 2, max_models: int = 300,
                       progress=None) -> tuple[Calibration | None, str]:
    """:func:`calibrate`, read from / written to ``cache_dir`` when a history key is known -> (calibration, cache)."""
    path = None
    if cache_dir is not None and history_key:
        path = cache_dir / f"{cache_key(history_key, n_b, params, seeds, max_models)}.cal.npz"
        if path.exists():
            try:
                return Calibration.load(path), "hit"
            except (OSError, KeyError, ValueError):
                pass
    cal = calibrate(H, rows, fm, n_b, params, seeds=seeds, max_models=max_models, progress=progress)
    state = "miss"
    if cal is not None and path is not None:
        try:
            cal.save(path)
        except OSError as e:
            state = f"not written ({e.strerror or e})"
    return cal, state
