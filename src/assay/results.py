"""Result objects shared by every method.

A result carries what a reader needs to cite it: the method, its parameters, the error level and
what it means, the sample size, the seed, the library version, and tidy tables (pandas
DataFrames). ``to_json()`` round-trips through :meth:`Result.from_json`; the CLI's ``--json``
prints exactly ``to_json()``.

JSON has no NaN or infinity, and a number stays a number: NaN is written as ``null``; +-infinity is written as
``null`` too, and its place is flagged in the top-level ``"infinite"`` list, one ``{"path": [...], "value": "+inf"}``
per infinity, where the path is the list of keys and row numbers that lead to it (``["configs", 3, "kpi_0.95"]``:
table ``configs``, row 3, column ``kpi_0.95``; ``["bonferroni_threshold"]`` for a scalar). A DataFrame built from a
table's records therefore has numeric columns (NaN where JSON says null), and :meth:`Result.from_dict` puts every
flagged infinity back. The key is absent when nothing is infinite.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, ClassVar, Iterable, Mapping, TypeVar

import numpy as np
import pandas as pd

from .errors import AssayInputError

__all__ = ["Interval", "Result", "Statement", "build", "fmt", "to_jsonable", "level_alias"]

_REGISTRY: dict[str, type["Result"]] = {}


@dataclass(frozen=True)
class Interval:
    """Two-sided intervals ``[low, high]`` at confidence ``level`` (= 1 - alpha), as scipy's ``ConfidenceInterval``.

    ``low`` and ``high`` are floats for one interval, or arrays aligned with the rows of a result's main table
    (:meth:`Result.confidence_interval`); ``width`` and ``contains`` then work row by row.
    """

    low: Any
    high: Any
    level: float

    @property
    def width(self) -> Any:
        w = np.asarray(self.high, dtype=float) - np.asarray(self.low, dtype=float)
        return float(w) if w.ndim == 0 else w

    def contains(self, value: Any) -> Any:
        c = (np.asarray(self.low) <= value) & (value <= np.asarray(self.high))
        return bool(c) if np.ndim(c) == 0 else c

    def to_dict(self) -> dict[str, Any]:
        return {"low": to_jsonable(self.low), "high": to_jsonable(self.high), "level": float(self.level)}

    def __iter__(self):  # low, high = res.confidence_interval()
        return iter((self.low, self.high))

    def __str__(self) -> str:
        if np.ndim(self.low) == 0:
            return f"[{float(self.low):.4f}, {float(self.high):.4f}] ({self.level:.0%})"
        pairs = ", ".join(f"[{lo:.4f}, {hi:.4f}]" for lo, hi in zip(np.ravel(self.low), np.ravel(self.high)))
        return f"{pairs} ({self.level:.0%})"


def to_jsonable(obj: Any, infinite: list[dict[str, Any]] | None = None, _path: tuple = ()) -> Any:
    """Convert numpy / pandas scalars and containers into plain JSON-safe Python objects.

    Dicts (keys made strings), lists, tuples, arrays, DataFrames (a list of row records) and :class:`Interval` are
    converted item by item; numpy scalars become ``bool`` / ``int`` / ``float``; anything else unknown becomes its
    ``str``. NaN and +-infinity become ``None`` (as do ``pd.NA`` and ``pd.NaT``); when ``infinite`` is a list, each
    infinity's path (keys and row numbers) is appended to it as ``{"path": [...], "value": "+inf" | "-inf"}``,
    which is how :meth:`Result.to_dict` keeps them recoverable.

    Parameters
    ----------
    obj : Any
        The object to convert.
    infinite : list of dict or None, optional
        A list to which the path of every infinity is appended; None (the default) to drop infinities silently.
    _path : tuple, optional
        The path of ``obj`` within the outermost object (internal: used by the recursion). Default ``()``.

    Returns
    -------
    Any
        A plain, JSON-safe copy of ``obj``.

    Examples
    --------
    >>> import numpy as np
    >>> flags = []
    >>> to_jsonable({"a": np.float64(1.5), "b": [np.inf, np.nan, np.int64(3)]}, flags)
    {'a': 1.5, 'b': [None, None, 3]}
    >>> flags
    [{'path': ['b', 0], 'value': '+inf'}]
    """
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v, infinite, (*_path, str(k))) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v, infinite, (*_path, i)) for i, v in enumerate(obj)]
    if isinstance(obj, np.ndarray):
        return [to_jsonable(v, infinite, (*_path, i)) for i, v in enumerate(obj.tolist())]
    if isinstance(obj, pd.DataFrame):
        return [to_jsonable(r, infinite, (*_path, i)) for i, r in enumerate(obj.to_dict(orient="records"))]
    if isinstance(obj, Interval):
        return to_jsonable(obj.to_dict(), infinite, _path)
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        x = float(obj)
        if math.isnan(x):
            return None
        if math.isinf(x):
            if infinite is not None:
                infinite.append({"path": list(_path), "value": "+inf" if x > 0 else "-inf"})
            return None
        return x
    if obj is None or isinstance(obj, str):
        return obj
    if obj is pd.NA or obj is pd.NaT:
        return None
    return str(obj)


def _put_infinities(d: dict[str, Any], infinite: Iterable[Mapping[str, Any]]) -> None:
    """Undo :func:`to_jsonable`'s ``None`` for every flagged infinity of a JSON dict (in place)."""
    for flag in infinite:
        try:
            *head, last = flag["path"]
            node: Any = d
            for k in head:
                node = node[k]
            node[last] = float("inf") if flag["value"] == "+inf" else float("-inf")
        except (KeyError, IndexError, ValueError, TypeError):
            continue  # a path that no longer exists (hand-edited JSON): leave it as null


def _restore_column(values: list[Any]) -> Any:
    """Numeric columns come back as float arrays with NaN / inf restored; others stay as they are."""
    def numeric(v: Any) -> bool:
        return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)) or v in ("inf", "-inf")  # old files

    if values and all(v is None for v in values):
        return np.full(len(values), np.nan)
    if values and all(numeric(v) for v in values):
        if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            return values
        out = np.array([np.nan if v is None else float(v) for v in values], dtype=float)
        return out
    return values


def _frame_from_records(records: list[dict[str, Any]]) -> pd.DataFrame:
    if not records:
        return pd.DataFrame()
    columns = list(records[0].keys())
    for r in records[1:]:
        for c in r:
            if c not in columns:
                columns.append(c)
    data = {c: _restore_column([r.get(c) for r in records]) for c in columns}
    return pd.DataFrame(data, columns=columns)


def fmt(x: Any, digits: int = 3) -> str:
    """Format a number as a statement prints it: ``digits`` decimals, ``"n/a"`` for None, NaN or an infinity.

    Parameters
    ----------
    x : float or None
        The number to format.
    digits : int, default 3
        Number of decimals.

    Returns
    -------
    str
        ``x`` with ``digits`` decimals, or ``"n/a"``.

    Examples
    --------
    >>> fmt(0.12345), fmt(2, digits=1), fmt(None), fmt(float("nan"))
    ('0.123', '2.0', 'n/a', 'n/a')
    """
    return "n/a" if x is None or not np.isfinite(x) else f"{x:.{digits}f}"


class Statement(str):
    """One claim of a result in a plain sentence (it is the sentence: a ``str``), with whom it is about and the
    guarantee it holds at.

    ``subject``: the model, configuration or pair the claim is about; ``""`` for the model the whole result is about
    (a caller that ran the method for a named model knows its name). ``level``: the guarantee, in words.

    >>> s = Statement("accuracy is in [0.61, 0.70]", level="about 95%")
    >>> s, s.level
    ('accuracy is in [0.61, 0.70]', 'about 95%')
    """

    subject: str
    level: str

    def __new__(cls, text: str, subject: str = "", level: str = "") -> "Statement":
        out = super().__new__(cls, text)
        out.subject, out.level = str(subject), str(level)
        return out


class Result:
    """Base class of every method's result.

    Subclasses set ``method`` (the registry key), ``main_table`` (the table returned by
    ``.table`` / ``to_frame()``) and optionally override :meth:`summary`.

    Attributes
    ----------
    params : dict
        Every argument that shaped the numbers (JSON-safe).
    level : dict
        The error level, e.g. ``{"alpha": 0.05, "meaning": "..."}``.
    n : int
        Sample size (items, labels, observations: the method says which in ``level``).
    seed : int or None
        The integer seed actually used (drawn from OS entropy and recorded when none was given).
    tables : dict[str, DataFrame]
        Tidy tables; the JSON carries each as a list of records under its name.
    info : dict
        Further JSON-safe scalars and small structures (diagnostics, notes).
    """

    method: ClassVar[str] = "result"
    main_table: ClassVar[str] = "table"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _REGISTRY[cls.method] = cls

    def __init__(
        self,
        *,
        params: dict[str, Any],
        level: dict[str, Any],
        n: int,
        seed: int | None,
        tables: dict[str, pd.DataFrame],
        info: dict[str, Any] | None = None,
        version: str | None = None,
    ) -> None:
        from ._version import __version__

        self.params = dict(params)
        self.level = dict(level)
        self.n = int(n)
        self.seed = seed
        # Tables may be given as DataFrames or as dicts of columns; the latter are turned into
        # DataFrames on first access (building DataFrames dominates the cost of a small result).
        self._tables = dict(tables)
        self.info = dict(info or {})
        self.version = version or __version__

    # -- views -------------------------------------------------------------------------------
    @property
    def tables(self) -> dict[str, pd.DataFrame]:
        for k, v in self._tables.items():
            if not isinstance(v, pd.DataFrame):
                self._tables[k] = pd.DataFrame(v)
        return self._tables

    @property
    def table(self) -> pd.DataFrame:
        return self.tables[self.main_table]

    @property
    def warnings(self) -> list[str]:
        """Plain sentences the reader must see beside the numbers (stored in ``info["warnings"]``)."""
        return list(self.info.get("warnings", []))

    @property
    def n_meaning(self) -> str:
        """What ``n`` counts in this result (items, labels, observations, queries, tickets)."""
        return str(self.level.get("n_meaning", ""))

    @property
    def confidence(self) -> float | None:
        """The confidence level 1 - alpha (or 1 - delta) of the result's intervals and certificates."""
        err = self.level.get("alpha", self.level.get("delta"))
        return None if err is None else 1.0 - float(err)

    def confidence_interval(self) -> Interval:
        """The main table's intervals, one per row (``ci_low`` / ``ci_high``), at the result's level.

        As ``scipy.stats``' ``confidence_interval()``: ``low, high = res.confidence_interval()``. Results whose
        main table holds bands (``lower`` / ``upper`` per point) or one-sided certificates say so instead.
        """
        t = self.table
        if not {"ci_low", "ci_high"} <= set(t.columns):
            raise AssayInputError(
                f"a {self.method} result's main table ({self.main_table!r}) has no ci_low / ci_high columns: "
                f"{self._no_interval_hint()}"
            )
        return Interval(t["ci_low"].to_numpy(dtype=float), t["ci_high"].to_numpy(dtype=float),
                        self.confidence if self.confidence is not None else float("nan"))

    def _no_interval_hint(self) -> str:
        return "see its tables for what it reports"

    def to_frame(self) -> pd.DataFrame:
        """The main tidy table (a copy)."""
        return self.table.copy()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "method": self.method,
            "version": self.version,
            "params": self.params,
            "level": self.level,
            "n": self.n,
            "seed": self.seed,
        }
        out.update(self.info)
        out.pop("infinite", None)
        for name, frame in self.tables.items():
            out[name] = frame
        infinite: list[dict[str, Any]] = []
        d = to_jsonable(out, infinite)
        if infinite:
            d["infinite"] = infinite
        return d

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Result":
        if d.get("infinite"):
            d = json.loads(json.dumps(d))  # a copy: the caller's dict stays as it was
            _put_infinities(d, d.pop("infinite"))
        method = d.get("method", cls.method)
        target = _REGISTRY.get(method, cls)
        table_names = target._table_names()
        tables = {k: _frame_from_records(d[k]) for k in table_names if k in d}
        skip = {"method", "version", "params", "level", "n", "seed", *table_names}
        info = {k: v for k, v in d.items() if k not in skip}
        obj = target.__new__(target)
        Result.__init__(
            obj,
            params=d.get("params", {}),
            level=d.get("level", {}),
            n=d.get("n", 0),
            seed=d.get("seed"),
            tables=tables,
            info=info,
            version=d.get("version"),
        )
        obj._restore()
        return obj

    def _restore(self) -> None:
        """Hook for subclasses: undo JSON's losses (NaN written as null) in ``info`` after loading."""

    @classmethod
    def from_json(cls, text: str) -> "Result":
        return cls.from_dict(json.loads(text))

    @classmethod
    def _table_names(cls) -> tuple[str, ...]:
        return (cls.main_table,)

    def statements(self) -> list[Statement]:
        """The result's headline: one :class:`Statement` per claim a reader acts on, with its guarantee. Each
        method states its own (the campaign's summary is these, method by method)."""
        raise NotImplementedError(f"{type(self).__name__} does not state its headline")

    def summary(self) -> str:
        lines = [f"{self.method} (assay {self.version}), n = {self.n}, seed = {self.seed}"]
        for k, v in self.level.items():
            lines.append(f"  {k}: {v}")
        lines.append(self.table.to_string(index=False))
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        """How a result shows itself in a notebook: what it guarantees, its size and seed, warnings, the main table."""
        import html

        esc = html.escape
        lvl = self.level
        err = next(((k, lvl[k]) for k in ("alpha", "delta") if k in lvl), None)
        head = f"<b>{esc(type(self).__name__)}</b> (assay {esc(str(self.version))})"
        meta = [f"n = {self.n}" + (f" ({esc(self.n_meaning)})" if self.n_meaning else ""),
                f"seed = {esc(str(self.seed))}"]
        if err is not None:
            meta.insert(0, f"{esc(err[0])} = {float(err[1]):g}")
        parts = [f"<div class='assay-result'><p>{head}<br>{' &middot; '.join(meta)}</p>"]
        if lvl.get("meaning"):
            parts.append(f"<p><i>Guarantee:</i> {esc(str(lvl['meaning']))}</p>")
        if self.warnings:
            items = "".join(f"<li>{esc(w)}</li>" for w in self.warnings)
            parts.append(f"<p><b>Warnings</b></p><ul>{items}</ul>")
        t = self.table
        shown = t.head(30)
        parts.append(shown.to_html(index=False, escape=True, float_format=lambda x: f"{x:.4g}", na_rep=""))
        if len(t) > len(shown):
            parts.append(f"<p>{len(t) - len(shown)} more rows: <code>.table</code> has all {len(t)}.</p>")
        parts.append("</div>")
        return "".join(parts)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} method={self.method!r} n={self.n} rows={len(self.table)}>"


def level_alias(alpha: Any, delta: Any, default: float) -> Any:
    """Resolve the error level of a method that accepts both ``alpha`` and ``delta``.

    A method whose paper calls the error level alpha (SIREN, FAQ) also accepts assay's common name ``delta``. The
    level is ``delta`` when given (``alpha`` must then be left at its ``default`` or agree), else ``alpha``.

    Parameters
    ----------
    alpha : Any
        The error level under the paper's name.
    delta : Any
        The error level under assay's name, or None when not given.
    default : float
        The default value of ``alpha`` in the method's signature.

    Returns
    -------
    Any
        ``delta`` when given, else ``alpha``.

    Raises
    ------
    AssayInputError
        When both are given and disagree (``alpha`` differs from its ``default`` and from ``delta``).

    Examples
    --------
    >>> level_alias(0.1, None, 0.1), level_alias(0.1, 0.05, 0.1)
    (0.1, 0.05)
    >>> level_alias(0.2, 0.05, 0.1)
    Traceback (most recent call last):
    ...
    assay.errors.AssayInputError: give the error level once: alpha=0.2 and delta=0.05 disagree (delta is ...
    """
    if delta is None:
        return alpha
    if alpha != default and alpha != delta:
        raise AssayInputError(f"give the error level once: alpha={alpha!r} and delta={delta!r} disagree (delta is "
                              "assay's name for it, alpha the paper's)")
    return delta


R = TypeVar("R", bound=Result)


def build(
    cls: type[R],
    *,
    params: Mapping[str, Any],
    n: int,
    n_meaning: str,
    meaning: str,
    seed: Any,
    tables: Mapping[str, Any],
    alpha: float | None = None,
    delta: float | None = None,
    warnings: Iterable[str] = (),
    info: Mapping[str, Any] | None = None,
) -> R:
    """Package a method's numbers into its Result: the one builder every entry function ends with.

    Parameters
    ----------
    cls : the Result subclass.
    params : every argument that shaped the numbers.
    n, n_meaning : the sample size and what it counts (``"evaluation items shared by every cell"``).
    meaning : what the error level guarantees, in one sentence.
    seed : the resolved :class:`assay.seeds.Seed` (or the recorded int / None).
    tables : name -> DataFrame or dict of columns; the first is the main table unless ``cls`` names another.
    alpha, delta : exactly one: the miscoverage of intervals (``alpha``) or the error level of
        certificates and tests (``delta``).
    warnings : plain sentences the reader must see beside the numbers (duplicates dropped, order kept).
    info : further JSON-safe diagnostics.
    """
    if (alpha is None) == (delta is None):
        raise TypeError("build() takes exactly one of alpha or delta")
    name, err = ("alpha", alpha) if alpha is not None else ("delta", delta)
    level = {name: float(err), "meaning": meaning, "n_meaning": n_meaning}
    recorded = getattr(seed, "recorded", seed)
    out_info = dict(info or {})
    if recorded is None and getattr(seed, "source", None) in ("generator", "spawned"):
        out_info["seed_source"] = seed.source
    out_info["warnings"] = list(dict.fromkeys(str(w) for w in [*out_info.get("warnings", []), *warnings]))
    return cls(params=dict(params), level=level, n=int(n), seed=recorded, tables=dict(tables), info=out_info)
