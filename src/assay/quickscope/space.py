"""Search spaces for QuickScope: integer, float, categorical and constant parameters, conditions, forbidden combinations.

A configuration is a plain dict ``{name: value}`` holding the ACTIVE parameters only (a conditional parameter whose
condition fails is absent). Spaces are written in Python or read from a dict / YAML::

    parameters:
      type: {type: categorical, choices: [arithmetic, linear_equation, bool_logic]}
      depth: {type: integer, low: 2, high: 6}
      children: {type: integer, low: 1, high: 3, when: {type: [arithmetic, bool_logic]}}
      temperature: {type: float, low: 0.0, high: 1.0, log: false}
    forbidden:
      - {type: linear_equation, depth: [5, 6]}

``when``: the parameter is active only if every named parent (declared earlier) takes one of the listed values.
``forbidden``: a configuration matching every listed key (a value or a list of values) is invalid; Python
predicates ``config -> bool`` (True = forbidden) are accepted too.

Uniform sampling: a finite space with at most ``ENUMERATE_LIMIT`` valid configurations is enumerated once and
sampled uniformly over its VALID configurations (each template equally likely). Larger or continuous spaces are
sampled parameter by parameter (uniform per parameter, conditions applied) with rejection of forbidden
configurations; there, a configuration's probability depends on how many children its branch has, which is said
in :meth:`SearchSpace.sample`'s docstring.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..errors import AssayInputError

__all__ = ["Integer", "Float", "Categorical", "Constant", "SearchSpace", "ENUMERATE_LIMIT"]

ENUMERATE_LIMIT = 1_000_000


def _bound(pname, end: str, v, integer: bool):
    """A range end as a number: finite, whole for Integer (|v| <= 2**53, exact in float64)."""
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise AssayInputError(f"parameter {pname!r}: {end} must be a number; got {v!r}")
    if not math.isfinite(float(v)):
        raise AssayInputError(f"parameter {pname!r}: {end} must be finite; got {v!r}")
    if integer:
        if abs(float(v)) > 2**53 or float(v) != math.floor(float(v)):
            raise AssayInputError(f"parameter {pname!r}: an integer range needs whole-number ends within +-2**53; "
                                  f"{end} = {v!r}")
        return int(v)
    return float(v)


@dataclass(frozen=True)
class _Param:
    name: str
    when: Mapping[str, tuple] = field(default_factory=dict)

    def _when_dict(self):
        return {k: list(v) for k, v in self.when.items()}


@dataclass(frozen=True)
class Integer(_Param):
    low: int = 0
    high: int = 1
    log: bool = False

    def __init__(self, name, low, high, log=False, when=None):
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "low", _bound(name, "low", low, True))
        object.__setattr__(self, "high", _bound(name, "high", high, True))
        object.__setattr__(self, "log", bool(log))
        object.__setattr__(self, "when", _norm_when(when))

    def values(self):
        return list(range(int(self.low), int(self.high) + 1))

    def count(self) -> int:
        """How many values, without listing them (a seed or a size may span 10^12 values)."""
        return int(self.high) - int(self.low) + 1

    def finite(self):
        return True

    def sample(self, rng):
        if self.log:
            return int(min(self.high, max(self.low, round(math.exp(rng.uniform(math.log(self.low), math.log(self.high + 1)) - 1e-12)))))
        return int(rng.integers(self.low, self.high + 1))

    def check(self, v):
        return isinstance(v, (int, np.integer)) and not isinstance(v, bool) and self.low <= v <= self.high

    def to_dict(self):
        d = {"type": "integer", "low": int(self.low), "high": int(self.high)}
        if self.log:
            d["log"] = True
        if self.when:
            d["when"] = self._when_dict()
        return d


@dataclass(frozen=True)
class Float(_Param):
    low: float = 0.0
    high: float = 1.0
    log: bool = False

    def __init__(self, name, low, high, log=False, when=None):
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "low", _bound(name, "low", low, False))
        object.__setattr__(self, "high", _bound(name, "high", high, False))
        object.__setattr__(self, "log", bool(log))
        object.__setattr__(self, "when", _norm_when(when))

    def finite(self):
        return self.low == self.high

    def values(self):
        return [self.low] if self.low == self.high else None

    def count(self) -> float:
        return 1 if self.low == self.high else math.inf

    def sample(self, rng):
        if self.log:
            return float(math.exp(rng.uniform(math.log(self.low), math.log(self.high))))
        return float(rng.uniform(self.low, self.high))

    def check(self, v):
        return isinstance(v, (int, float, np.floating, np.integer)) and not isinstance(v, bool) and self.low <= v <= self.high

    def to_dict(self):
        d = {"type": "float", "low": self.low, "high": self.high}
        if self.log:
            d["log"] = True
        if self.when:
            d["when"] = self._when_dict()
        return d


@dataclass(frozen=True)
class Categorical(_Param):
    choices: tuple = ()

    def __init__(self, name, choices, when=None):
        object.__setattr__(self, "name", name)
        if isinstance(choices, (str, bytes)) or not hasattr(choices, "__iter__"):
            raise AssayInputError(f"parameter {name!r}: choices must be a list of values; got {choices!r}")
        choices = tuple(choices)
        for c in choices:
            try:
                hash(c)
            except TypeError:
                raise AssayInputError(f"parameter {name!r}: choice {c!r} is not a plain value (number or text)") from None
            if isinstance(c, float) and not math.isfinite(c):
                raise AssayInputError(f"parameter {name!r}: choice {c!r} is not a finite value")
        if len(set(map(repr, choices))) != len(choices):
            raise AssayInputError(f"parameter {name!r}: duplicate choices in {list(choices)!r}")
        object.__setattr__(self, "choices", choices)
        object.__setattr__(self, "when", _norm_when(when))

    def finite(self):
        return True

    def values(self):
        return list(self.choices)

    def count(self) -> int:
        return len(self.choices)

    def sample(self, rng):
        return self.choices[int(rng.integers(len(self.choices)))]

    def check(self, v):
        return any(_same(v, c) for c in self.choices)

    def to_dict(self):
        d = {"type": "categorical", "choices": list(self.choices)}
        if self.when:
            d["when"] = self._when_dict()
        return d


@dataclass(frozen=True)
class Constant(_Param):
    value: Any = None

    def __init__(self, name, value, when=None):
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "value", value)
        object.__setattr__(self, "when", _norm_when(when))

    def finite(self):
        return True

    def values(self):
        return [self.value]

    def count(self) -> int:
        return 1

    def sample(self, rng):
        return self.value

    def check(self, v):
        return _same(v, self.value)

    def to_dict(self):
        d = {"type": "constant", "value": self.value}
        if self.when:
            d["when"] = self._when_dict()
        return d


def _same(a, b) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b or (isinstance(a, (bool, np.bool_)) and isinstance(b, (bool, np.bool_)) and bool(a) == bool(b))
    return a == b


def _norm_when(when) -> dict:
    if not when:
        return {}
    if not isinstance(when, Mapping):
        raise AssayInputError(f"'when' must map parent names to allowed values; got {when!r}")
    out = {}
    for k, v in when.items():
        vals = tuple(v) if isinstance(v, (list, tuple, set)) else (v,)
        if not vals:
            raise AssayInputError(f"condition on {k!r} lists no values")
        out[str(k)] = vals
    return out


def _canon(v):
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return round(float(v), 6)
    return v


class SearchSpace:
    """A configuration space: parameters (in order, parents before children) and forbidden combinations."""

    def __init__(self, params: Sequence[_Param], forbidden: Sequence[Mapping | Callable] = ()):
        params = list(params)
        if not params:
            raise AssayInputError("a search space needs at least one parameter")
        names = [p.name for p in params]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise AssayInputError(f"duplicate parameter name(s): {', '.join(sorted(dup))}")
        self.params = params
        self._by = {p.name: p for p in params}
        seen: set[str] = set()
        for p in params:
            if not isinstance(p, _Param):
                raise AssayInputError(f"search space parameters must be Integer, Float, Categorical or Constant; got {p!r}")
            if not isinstance(p.name, str) or not p.name:
                raise AssayInputError(f"a parameter name must be a non-empty string; got {p.name!r}")
            if isinstance(p, (Integer, Float)):
                for end in ("low", "high"):
                    v = getattr(p, end)
                    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
                        raise AssayInputError(f"parameter {p.name!r}: {end} must be a number; got {v!r}")
                    if isinstance(p, Integer) and float(v) != int(v):
                        raise AssayInputError(f"parameter {p.name!r}: an integer range needs whole-number ends; "
                                              f"{end} = {v!r}")
                if not (np.isfinite(p.low) and np.isfinite(p.high)) or p.low > p.high:
                    raise AssayInputError(f"parameter {p.name!r}: low {p.low!r} > high {p.high!r} (or not finite)")
                if p.log and p.low <= 0:
                    raise AssayInputError(f"parameter {p.name!r}: a log-scale range must be positive")
            if isinstance(p, Categorical) and not p.choices:
                raise AssayInputError(f"parameter {p.name!r} has no choices")
            for parent, vals in p.when.items():
                if parent not in seen:
                    raise AssayInputError(f"parameter {p.name!r} is conditioned on {parent!r}, which is not declared before it")
                for v in vals:
                    if not self._by[parent].check(v):
                        raise AssayInputError(f"parameter {p.name!r}: condition value {v!r} is not a value {parent!r} can take")
            seen.add(p.name)
        self.forbidden: list = []
        for f in forbidden:
            if callable(f):
                self.forbidden.append(f)
                continue
            if not isinstance(f, Mapping) or not f:
                raise AssayInputError(f"a forbidden clause must be a non-empty mapping or a callable; got {f!r}")
            clause = {}
            for k, v in f.items():
                if k not in self._by:
                    raise AssayInputError(f"forbidden clause names unknown parameter {k!r}")
                vals = tuple(v) if isinstance(v, (list, tuple, set)) else (v,)
                for x in vals:
                    if not self._by[k].check(x):
                        raise AssayInputError(f"forbidden clause: {x!r} is not a value of {k!r}")
                clause[k] = vals
            self.forbidden.append(clause)
        self._finite = all(p.finite() for p in params)
        self._enum: list[dict] | None = None
        self._enum_keys: list[str] | None = None
        if self._finite and self._count_upper() <= ENUMERATE_LIMIT:
            self._enum = list(self._enumerate())
            if not self._enum:
                raise AssayInputError("every configuration of this search space is forbidden (contradictory space)")
            self._enum_keys = [self.key(c) for c in self._enum]
        self._build_encoding()

    # -- construction from data ----------------------------------------------------------------------

    @classmethod
    def from_dict(cls, d: Mapping) -> "SearchSpace":
        if not isinstance(d, Mapping) or "parameters" not in d or not isinstance(d["parameters"], Mapping):
            raise AssayInputError("a search space dict needs a 'parameters' mapping (name -> spec)")
        params = []
        for name, spec in d["parameters"].items():
            if not isinstance(spec, Mapping) or "type" not in spec:
                raise AssayInputError(f"parameter {name!r}: spec must be a mapping with a 'type'")
            t = str(spec["type"]).lower()
            when = spec.get("when")
            try:
                if t in ("integer", "int"):
                    params.append(Integer(name, int(spec["low"]), int(spec["high"]), spec.get("log", False), when))
                elif t == "float":
                    params.append(Float(name, spec["low"], spec["high"], spec.get("log", False), when))
                elif t in ("categorical", "ordinal"):
                    params.append(Categorical(name, spec["choices"], when))
                elif t == "constant":
                    params.append(Constant(name, spec["value"], when))
                else:
                    raise AssayInputError(f"parameter {name!r}: unknown type {t!r}; use integer, float, categorical or constant")
            except KeyError as e:
                raise AssayInputError(f"parameter {name!r} ({t}) is missing {e.args[0]!r}") from None
            except (TypeError, ValueError) as e:
                raise AssayInputError(f"parameter {name!r}: {e}") from None
        return cls(params, d.get("forbidden", ()) or ())

    @classmethod
    def from_yaml(cls, source) -> "SearchSpace":
        """From a YAML file path or YAML text."""
        import os

        import yaml

        text = source
        if isinstance(source, os.PathLike) or (isinstance(source, str) and "\n" not in source and os.path.exists(source)):
            try:
                with open(source, encoding="utf-8") as f:
                    text = f.read()
            except FileNotFoundError:
                raise AssayInputError(f"no search space file {str(source)!r}") from None
            except (OSError, UnicodeDecodeError) as e:
                raise AssayInputError(f"cannot read the search space file {str(source)!r}: {e}") from None
        try:
            d = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise AssayInputError(f"search space YAML does not parse: {e}") from None
        return cls.from_dict(d)

    def to_dict(self) -> dict:
        return {"parameters": {p.name: p.to_dict() for p in self.params},
                "forbidden": [{k: list(v) for k, v in f.items()} for f in self.forbidden if not callable(f)]}

    # -- validity ------------------------------------------------------------------------------------

    def _active(self, p: _Param, cfg: Mapping) -> bool:
        return all(parent in cfg and any(_same(cfg[parent], v) for v in vals) for parent, vals in p.when.items())

    def is_forbidden(self, cfg: Mapping) -> bool:
        for f in self.forbidden:
            if callable(f):
                if f(cfg):
                    return True
            elif all(k in cfg and any(_same(cfg[k], v) for v in vals) for k, vals in f.items()):
                return True
        return False

    def validate(self, cfg: Mapping) -> None:
        """Raise AssayInputError if ``cfg`` is not a valid configuration of this space."""
        if not isinstance(cfg, Mapping):
            raise AssayInputError(f"a configuration must be a dict; got {type(cfg).__name__}")
        for p in self.params:
            active = self._active(p, cfg)
            if active and p.name not in cfg:
                raise AssayInputError(f"configuration lacks the active parameter {p.name!r}")
            if not active and p.name in cfg:
                raise AssayInputError(f"parameter {p.name!r} is inactive under its condition {p._when_dict()} but set")
            if active and not p.check(cfg[p.name]):
                raise AssayInputError(f"parameter {p.name!r} = {cfg[p.name]!r} is outside its range ({p.to_dict()})")
        extra = set(cfg) - set(self._by)
        if extra:
            raise AssayInputError(f"unknown parameter(s) {', '.join(sorted(map(str, extra)))}")
        if self.is_forbidden(cfg):
            raise AssayInputError(f"configuration {dict(cfg)} is forbidden")

    # -- enumeration and sampling --------------------------------------------------------------------

    def _count_upper(self) -> int:
        n = 1
        for p in self.params:
            n *= p.count() + (1 if p.when else 0)
            if n > 10 * ENUMERATE_LIMIT:
                return n
        return n

    def _enumerate(self):
        def rec(i, cfg):
            if i == len(self.params):
                if not self.is_forbidden(cfg):
                    yield dict(cfg)
                return
            p = self.params[i]
            if not self._active(p, cfg):
                yield from rec(i + 1, cfg)
                return
            for v in p.values():
                cfg[p.name] = v
                yield from rec(i + 1, cfg)
            del cfg[p.name]

        yield from rec(0, {})

    def size(self) -> float:
        """Number of valid configurations (``inf`` for continuous spaces or ones too large to enumerate)."""
        return float(len(self._enum)) if self._enum is not None else math.inf

    def enumerate(self) -> list[dict]:
        if self._enum is None:
            raise AssayInputError("this space is continuous or too large to enumerate")
        return [dict(c) for c in self._enum]

    def _draw_one(self, rng) -> dict:
        for _ in range(10_000):
            cfg: dict = {}
            for p in self.params:
                if self._active(p, cfg):
                    cfg[p.name] = p.sample(rng)
            if not self.is_forbidden(cfg):
                return cfg
        raise AssayInputError("10,000 random configurations in a row were forbidden: the space is (nearly) contradictory")

    def sample(self, n: int, rng: np.random.Generator) -> list[dict]:
        """``n`` configurations, uniform over the valid ones for enumerable spaces (with replacement);
        otherwise per-parameter uniform with conditions applied and forbidden ones rejected."""
        if self._enum is not None:
            return [dict(self._enum[i]) for i in rng.integers(len(self._enum), size=n)]
        return [self._draw_one(rng) for _ in range(n)]

    def sample_unseen(self, n: int, rng: np.random.Generator, seen: set[str]) -> list[dict]:
        """Up to ``n`` distinct configurations whose keys are not in ``seen`` (fewer when the space runs out)."""
        if self._enum is not None:
            free = [i for i, k in enumerate(self._enum_keys) if k not in seen]
            if not free:
                return []
            pick = rng.choice(len(free), size=min(n, len(free)), replace=False)
            return [dict(self._enum[free[i]]) for i in pick]
        out, keys, misses = [], set(), 0
        while len(out) < n and misses < 1000:
            c = self._draw_one(rng)
            k = self.key(c)
            if k in seen or k in keys:
                misses += 1
                continue
            out.append(c)
            keys.add(k)
        return out

    @staticmethod
    def key(cfg: Mapping) -> str:
        """Canonical string of a configuration (sorted names, floats rounded to 6 decimals)."""
        return json.dumps({str(k): _canon(cfg[k]) for k in sorted(cfg)}, sort_keys=True, default=str)

    # -- encoding for the surrogate ------------------------------------------------------------------

    def _build_encoding(self):
        cols = []
        for p in self.params:
            if isinstance(p, Categorical):
                cols += [f"{p.name}={c}" for c in p.choices]
            elif isinstance(p, (Integer, Float)):
                cols.append(p.name)
            if p.when:
                cols.append(f"{p.name}:active")
        self.feature_names = cols

    def encode(self, configs: Sequence[Mapping]) -> np.ndarray:
        """Features for a random forest: one-hot categoricals, numbers scaled to [0, 1] (log-scaled for log
        parameters), 0 for inactive parameters plus an ``active`` indicator per conditional parameter."""
        n = len(configs)
        out = np.zeros((n, len(self.feature_names)))
        j = 0
        for p in self.params:
            vals = [c.get(p.name) for c in configs]
            present = np.array([v is not None for v in vals])
            if isinstance(p, Categorical):
                idx = {_canon(c): i for i, c in enumerate(p.choices)}
                for r, v in enumerate(vals):
                    if v is not None:
                        out[r, j + idx[_canon(v)]] = 1.0
                j += len(p.choices)
            elif isinstance(p, (Integer, Float)):
                x = np.array([float(v) if v is not None else np.nan for v in vals])
                lo, hi = float(p.low), float(p.high)
                if p.log:
                    x, lo, hi = np.log(x), math.log(lo), math.log(hi)
                out[:, j] = np.where(present, (x - lo) / (hi - lo) if hi > lo else 0.0, 0.0)
                j += 1
            if p.when:
                out[:, j] = present
                j += 1
        return out

    def __repr__(self) -> str:
        size = self.size()
        return f"<SearchSpace {len(self.params)} parameters, {'continuous' if math.isinf(size) else int(size)} configurations>"
