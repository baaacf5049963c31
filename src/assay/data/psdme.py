"""PS-DME's data layer: a long (config, kpi) table -> one sorted KPI sample per configuration (:func:`prepare`).

The samples are the data sets D_k = {X_k,1, ..., X_k,n_k} of the PS-DME paper (eq. 1), one per configuration k,
in the order the configurations first appear in the table. A failed request may be recorded as KPI = +inf and
counted, with ``failures="worst"``, as an observation worse than every finite value.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
import pandas as pd

from ..errors import AssayInputError, describe_rows
from .tables import map_columns

__all__ = ["prepare", "PSDME_COLUMNS", "FAILURE_POLICIES"]

PSDME_COLUMNS = ("config", "kpi")
FAILURE_POLICIES = ("error", "worst")


def prepare(
    table: pd.DataFrame,
    *,
    columns: Mapping[str, str] | None = None,
    failures: str = "error",
) -> dict[str, np.ndarray]:
    """Validate a KPI table and split it into one sorted sample per configuration.

    Parameters
    ----------
    table : DataFrame
        One row per observation: a ``config`` column (the configuration) and a ``kpi`` column (lower is better).
    columns : mapping, optional
        Canonical name -> your column name, e.g. ``{"kpi": "ttft_s"}``.
    failures : {"error", "worst"}
        What a KPI of +inf means: an input error (default), or a failed request that counts as worse than every
        finite value (it stays in n_k).

    Returns
    -------
    dict of str -> ndarray
        ``{config: KPI values sorted ascending}``, configurations in order of first appearance; every sample has
        at least two observations.
    """
    if failures not in FAILURE_POLICIES:
        raise AssayInputError(f"failures must be 'error' or 'worst', got {failures!r}")
    mapping = {"config": None, "kpi": None}
    mapping.update(columns or {})
    df = map_columns(table, mapping, required=PSDME_COLUMNS)
    if df.empty:
        raise AssayInputError("the KPI table is empty")
    if df["config"].isna().any():
        raise AssayInputError(f"column 'config' is empty at {describe_rows(df.index[df['config'].isna()])}")
    kpi = pd.to_numeric(df["kpi"], errors="coerce")
    bad = kpi.isna() & df["kpi"].notna()
    if bad.any():
        raise AssayInputError(f"column 'kpi' has non-numeric values at {describe_rows(df.index[bad])}")
    if kpi.isna().any():
        raise AssayInputError(
            f"column 'kpi' is missing at {describe_rows(df.index[kpi.isna()])}; remove those rows, or record a "
            "failed request as +inf with failures='worst'"
        )
    kpi = kpi.astype(float)
    if np.isneginf(kpi).any():
        raise AssayInputError(f"column 'kpi' is -inf at {describe_rows(df.index[np.isneginf(kpi)])}")
    if np.isposinf(kpi).any() and failures != "worst":
        raise AssayInputError(
            f"column 'kpi' is +inf at {describe_rows(df.index[np.isposinf(kpi)])}; if these are failures "
            "(errored requests), pass failures='worst' to count them as worse than "
            "every finite value"
        )
    # one sample per configuration, in order of first appearance, each sorted (a pandas groupby here cost more than
    # the bands themselves for a Monte Carlo study calling this thousands of times)
    codes, names = pd.factorize(df["config"].astype(str), sort=False)
    order = np.argsort(codes, kind="stable")  # rows grouped by configuration, in table order within each
    cuts = np.cumsum(np.bincount(codes, minlength=len(names)))[:-1]
    values = kpi.to_numpy()[order]
    out: dict[str, np.ndarray] = {str(c): np.sort(v) for c, v in zip(names, np.split(values, cuts))}
    small = [c for c, v in out.items() if len(v) < 2]
    if small:
        raise AssayInputError(
            f"configurations with fewer than 2 observations: {', '.join(small[:5])}; a CDF band needs data"
        )
    return out
