"""The campaign file of ``assay eval``: its schema, read from TOML into frozen dataclasses and validated.

A campaign file names the models (or configurations of one model) under test and the sections to run on them::

    [campaign]   name, seed, confidence, out, journal           (required: name)
    [budget]     questions, tokens, dollars                     (optional caps, per model)
    [[model]]    name, endpoint, model, api_key_env, template, system, temperature, max_tokens, completions, stream,
                 price_in, price_out, context_window, concurrency, timeout            (one block per model)
    [bank]       path, id_col, prompt_col, reference_col, choices_col, scorer, scorer_col, policy, sample
    [faq]        history, budget, until_width, fallback, calibrate
    [scope]      generator, space, budget, certify, utility
    [judge]      endpoint, model, api_key_env, completions, rubric, human_labels, human_col, risk_target, loss
    [kpi]        metrics, select, k, target, band
    [siren]      configurations, budgets, splits
    [compare]    budget, margin, batch, goal, k, guarantee, history

``examples/campaign.toml`` documents every key. Each dataclass field carries its check (what it accepts, how a raw
TOML value becomes the stored one) in its metadata, so the dataclasses are the schema. Relative paths are resolved
against the campaign file's folder. Every problem is an :class:`~assay.errors.AssayInputError` naming the file, the
key (``[[model]] #2 .temperature``) and what would be accepted. An API key is never read from the file: a string
that looks like one is refused without being echoed; ``api_key_env`` names the environment variable holding it.
"""

# ruff: noqa: RUF009  (_key wraps dataclasses.field: the call builds a field, not a shared default)
from __future__ import annotations

import difflib
import hashlib
import itertools
import json
import os
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .. import checks
from ..errors import AssayInputError
from ..models.outcomes import DEFAULT_POLICY, POLICIES
from ..models.scoring import SCORERS

__all__ = ["GENERATORS", "KPI_METRICS", "SECTIONS", "BankSpec", "Budget", "Campaign", "CompareSpec", "FaqSpec",
           "JudgeSpec", "KpiSpec", "ModelSpec", "ScopeSpec", "SirenSpec", "load_campaign", "parse_campaign"]

#: the method sections, in the order a campaign runs and reports them
SECTIONS: tuple[str, ...] = ("faq", "scope", "judge", "kpi", "siren", "compare")
#: QuickScope generators (as ``assay scope --generator`` lists them). Kept here rather than read from assay.benchmarks'
#: registry, whose loading imports every generator and its optional extras; a test checks that the two agree.
GENERATORS: tuple[str, ...] = ("dyval", "grid", "reasoning_gym")
#: the KPIs a live run measures per request (PS-DME)
KPI_METRICS: tuple[str, ...] = ("latency_s", "ttft_s", "prompt_tokens", "completion_tokens", "cost")
_TABLES = (".csv", ".jsonl", ".parquet")
_PLACEHOLDERS = ("question", "choices")


# -- Checks: each says what it accepts and turns a raw TOML value into the stored one, or raises _Bad -----------------


class _Bad(Exception):
    """A value its key does not accept; the argument, if any, is a hint said after the offending value."""


@dataclass(frozen=True)
class _Check:
    what: str                            # what is accepted, said in every error about this key
    conv: Callable[[Any, Path], Any]     # (raw value, campaign folder) -> stored value, or raises _Bad


def _key(check: _Check, default: Any = MISSING) -> Any:
    """A dataclass field read from the file with ``check``; no default means the key is required."""
    return field(default=default, metadata={"check": check})


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _when(what: str, ok: Callable[[Any], bool]) -> _Check:
    """A check that keeps the value as written when ``ok(value)``."""
    def conv(v, base):
        if not ok(v):
            raise _Bad
        return v
    return _Check(what, conv)


def _integer(lo: int) -> _Check:
    def conv(v, base):
        try:
            return checks.positive_int(v, "", minimum=lo)
        except AssayInputError:
            raise _Bad from None
    return _Check(f"a whole number >= {lo}", conv)


def _text(pattern: str = r"(?s).*\S.*", what: str = "a non-empty string") -> _Check:
    return _when(what, lambda v: isinstance(v, str) and re.fullmatch(pattern, v) is not None)


def _number(lo: float, hi: float | None = None, *, lo_open: bool = False, hi_open: bool = False) -> _Check:
    if hi is None:
        what = f"a number {'>' if lo_open else '>='} {lo:g}"
    else:
        what = f"a number in {'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"

    def conv(v, base):
        if not (isinstance(v, float) or _is_int(v)):  # TOML writes 1 for 1.0: whole numbers are numbers too
            raise _Bad
        try:
            return checks.number(v, "", low=lo, high=hi, low_open=lo_open, high_open=hi_open)
        except (AssayInputError, OverflowError):
            raise _Bad from None
    return _Check(what, conv)


def _suggest(word: Any, names) -> str:
    close = difflib.get_close_matches(str(word), [str(n) for n in names], n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _choice(names) -> _Check:
    names = tuple(names)

    def conv(v, base):
        if not isinstance(v, str) or v not in names:
            raise _Bad(_suggest(v, names) if isinstance(v, str) else "")
        return v
    return _Check("one of " + ", ".join(map(repr, names)), conv)


def _resolve(v: Any, base: Path) -> Path:
    if not isinstance(v, str) or not v.strip() or "\0" in v:
        raise _Bad
    p = Path(v)
    try:
        p = p.expanduser()
    except RuntimeError:  # "~someone" for an unknown user: keep it as written, relative to the campaign folder
        pass
    return Path(os.path.normpath(base / p))


def _file(suffixes: tuple[str, ...] = ()) -> _Check:
    def conv(v, base):
        p = _resolve(v, base)
        try:
            found = p.is_file()
        except (OSError, ValueError):  # a name too long for the file system is just as absent
            found = False
        if not found:
            raise _Bad(f" (no file at {p})")
        if suffixes and p.suffix.lower() not in suffixes:
            raise _Bad(f" (a {p.suffix or 'suffix-less'} file)")
        return p
    kinds = f" ({', '.join(suffixes)})" if suffixes else ""
    return _Check(f"an existing file{kinds}, relative to the campaign file's folder", conv)


def _url(v: Any, base: Path) -> str:
    if not isinstance(v, str) or any(c.isspace() for c in v):
        raise _Bad
    try:
        parts = urlsplit(v)
    except ValueError:
        raise _Bad from None
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise _Bad
    return v


def _template(v: Any, base: Path) -> str:
    if not isinstance(v, str):
        raise _Bad
    # placeholders are {name} tokens replaced by text; any other brace is kept as written (JSON in a prompt is fine)
    names = re.findall(r"\{([A-Za-z_][A-Za-z0-9_]*)\}", v)
    unknown = sorted(set(names) - set(_PLACEHOLDERS))
    if unknown:
        raise _Bad(f" (unknown placeholder {{{unknown[0]}}})")
    if "question" not in names:
        raise _Bad(" (no {question})")
    return v


def _budget(v: Any, base: Path) -> float | int:
    """A fraction of the bank or a count, by the one budget rule (:func:`assay.checks.budget`)."""
    try:
        return checks.budget(v)
    except AssayInputError:
        raise _Bad(" (for the whole bank write 1.0)" if _is_int(v) and v == 1 else "") from None


def _generator(v: Any, base: Path) -> str:
    if not isinstance(v, str):
        raise _Bad
    head, colon, task = v.partition(":")
    if head == "reasoning_gym" and re.fullmatch(r"[A-Za-z0-9_]+", task):
        return v
    if head in GENERATORS and head != "reasoning_gym" and not colon:
        return v
    raise _Bad(" (name the task: reasoning_gym:<task>)" if head == "reasoning_gym" else _suggest(head, GENERATORS))


def _rubric(v: Any, base: Path) -> str | Path:
    from ..models.judge import RUBRICS  # pandas comes with it: loaded only when a campaign has a judge

    if isinstance(v, str) and v in RUBRICS:
        return v
    return _file().conv(v, base)


def _list(item: _Check, what: str, *, distinct: bool = False, increasing: bool = False) -> _Check:
    def conv(v, base):
        if not isinstance(v, list) or not v:
            raise _Bad
        out = []
        for i, x in enumerate(v, 1):
            try:
                out.append(item.conv(x, base))
            except _Bad as e:
                raise _Bad(f" (item #{i} is {_show(x)}{e})") from None
        if distinct and len(set(out)) < len(out):
            raise _Bad(" (a name is repeated)")
        if increasing and any(b <= a for a, b in itertools.pairwise(out)):
            raise _Bad(" (not increasing)")
        return tuple(out)
    return _Check(what, conv)


_OPEN01 = _number(0, 1, lo_open=True, hi_open=True)
_URL = _Check("an http:// or https:// URL", _url)
_ENV = _text(r"[A-Z_][A-Z0-9_]*", "the NAME of an environment variable holding the key ([A-Z_][A-Z0-9_]*)")
_NAME = _text()
_BOOL = _when("true or false", lambda v: isinstance(v, bool))


# -- The schema: one frozen dataclass per section ---------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Budget:
    """Caps on what one model (configuration) may spend across every section; ``None`` means no cap."""
    questions: int | None = _key(_integer(1), None)
    tokens: int | None = _key(_integer(1), None)
    dollars: float | None = _key(_number(0, lo_open=True), None)


@dataclass(frozen=True, kw_only=True)
class ModelSpec:
    """One model or configuration under test: an OpenAI-compatible endpoint and how to ask it.

    ``price_in`` / ``price_out``: dollars per million prompt / completion tokens; ``timeout``: seconds.
    """
    name: str = _key(_NAME)
    endpoint: str = _key(_URL)
    model: str = _key(_text(what="the model's name as the endpoint knows it"))
    api_key_env: str | None = _key(_ENV, None)
    template: str = _key(_Check("a prompt template with {question} (and optionally {choices})", _template),
                         "{question}")
    system: str | None = _key(_when("a string", lambda v: isinstance(v, str)), None)
    temperature: float = _key(_number(0, 2), 0.0)
    max_tokens: int = _key(_integer(1), 512)  # bench/cutoff.py: the smallest limit cutting off <= 5% (docs/query.md)
    completions: bool = _key(_BOOL, False)
    stream: bool = _key(_BOOL, False)
    price_in: float = _key(_number(0), 0.0)
    price_out: float = _key(_number(0), 0.0)
    context_window: int | None = _key(_integer(16), None)
    concurrency: int = _key(_integer(1), 4)
    timeout: float = _key(_number(0, lo_open=True), 60.0)


@dataclass(frozen=True, kw_only=True)
class BankSpec:
    """The item bank the live sections ask from, its column names, and how an answer is scored."""
    path: Path = _key(_file(_TABLES))
    id_col: str = _key(_NAME, "id")
    prompt_col: str = _key(_NAME, "prompt")
    reference_col: str = _key(_NAME, "reference")
    choices_col: str | None = _key(_NAME, None)
    scorer: str = _key(_choice(SCORERS), "exact")
    scorer_col: str | None = _key(_NAME, None)
    policy: str = _key(_choice(POLICIES), DEFAULT_POLICY)
    # the uniform random sample of the bank that [judge], [kpi] and [siren] share (their guarantees need items
    # drawn at random, which FAQ's adaptively chosen questions are not); a fraction or a count
    sample: float | int = _key(_Check("a fraction in (0, 1] or a whole number of questions >= 2", _budget), 200)


@dataclass(frozen=True, kw_only=True)
class FaqSpec:
    """FAQ: accuracy on the whole bank from a few questions; ``budget`` is a fraction of the bank or a count."""
    history: Path = _key(_file(_TABLES))
    budget: float | int = _key(_Check("a fraction in (0, 1] or a whole number of questions >= 2", _budget), 0.05)
    until_width: float | None = _key(_OPEN01, None)
    fallback: float = _key(_number(0, 0.5, hi_open=True), 0.05)
    calibrate: bool = _key(_BOOL, True)


@dataclass(frozen=True, kw_only=True)
class ScopeSpec:
    """QuickScope: certified weak regions of a generated benchmark; ``budget`` is in model calls."""
    generator: str = _key(_Check("'dyval', 'grid' or 'reasoning_gym:<task>'", _generator), "dyval")
    space: Path | None = _key(_file((".yaml", ".yml", ".json")), None)
    budget: int = _key(_integer(1))
    certify: float | None = _key(_OPEN01, None)
    utility: str = _key(_choice(("error", "cwe")), "error")


@dataclass(frozen=True, kw_only=True)
class JudgeSpec:
    """R-AutoEval+: a risk certificate from an LLM judge's labels and, if given, a few human ones."""
    endpoint: str = _key(_URL)
    model: str = _key(_text(what="the judge model's name as the endpoint knows it"))
    api_key_env: str | None = _key(_ENV, None)
    completions: bool = _key(_BOOL, False)
    rubric: str | Path = _key(_Check("'default', 'fewshot' or an existing rubric file", _rubric), "default")
    human_labels: Path | None = _key(_file(_TABLES), None)
    human_col: str = _key(_NAME, "loss_human")
    risk_target: float = _key(_OPEN01)
    loss: str = _key(_choice(("0-1", "rubric")), "0-1")


@dataclass(frozen=True, kw_only=True)
class KpiSpec:
    """PS-DME: bands on per-request KPIs of every model, after the selection rule declared here."""
    metrics: tuple[str, ...] = _key(_list(_choice(KPI_METRICS), "a non-empty list of distinct names from "
                                          + ", ".join(map(repr, KPI_METRICS)), distinct=True))
    select: str = _key(_choice(("all", "best_mean", "top_k")), "all")
    k: int | None = _key(_integer(1), None)
    target: float = _key(_OPEN01, 0.9)
    band: str = _key(_choice(("dkw", "bj")), "bj")


def _history(v: Any, base: Path) -> Path | str:
    """[compare].history: a shipped FAQ pack by name, else a table file beside the campaign."""
    from ..datasets.faq_packs import faq_packs

    if isinstance(v, str) and v in faq_packs():
        return v
    return _file(_TABLES).conv(v, base)


@dataclass(frozen=True, kw_only=True)
class CompareSpec:
    """compare: the [[model]] blocks asked questions of the bank, each only as long as ``goal`` needs it, until the goal
    is met (``all``: every pair ordered or equivalent within ``margin``; ``best``; ``top-k`` with ``k``), or
    ``budget`` questions a model are spent; ``history`` (a past 0/1 score table on the bank's ids, or a shipped FAQ
    pack's name) draws the questions that decide; ``guarantee`` finite (any sample size) or asymptotic."""
    budget: float | int = _key(_Check("a fraction in (0, 1] or a whole number of questions >= 2", _budget), 0.25)
    margin: float | None = _key(_OPEN01, None)
    batch: int = _key(_integer(1), 10)
    goal: str = _key(_choice(("all", "best", "top-k")), "all")
    k: int | None = _key(_integer(1), None)
    guarantee: str = _key(_choice(("finite", "asymptotic")), "finite")
    history: Path | str | None = _key(_Check("a table file (.csv, .jsonl, .parquet) or a shipped FAQ pack's name",
                                             lambda v, base: _history(v, base)), None)


@dataclass(frozen=True, kw_only=True)
class SirenSpec:
    """SIREN: the score of the configuration a search picked, with the search accounted for."""
    configurations: str = _key(_choice(("models",)), "models")
    budgets: tuple[int, ...] = _key(_list(_integer(1), "a non-empty increasing list of whole numbers >= 1",
                                          increasing=True))
    splits: int = _key(_integer(2), 50)


@dataclass(frozen=True, kw_only=True)
class Campaign:
    """A validated campaign file: the ``[campaign]`` keys, the models and the sections; ``delta = 1 - confidence``.

    ``out`` defaults to ``<name>-report`` next to the campaign file; ``journal`` ``None`` is the library default.
    """
    name: str = _key(_text(r"[A-Za-z0-9._-]+", "a name of letters, digits, '.', '_' and '-'"))
    seed: int = _key(_integer(0), 0)
    confidence: float = _key(_number(0.5, 1, lo_open=True, hi_open=True), 0.95)
    out: Path | None = _key(_Check("a path (relative to the campaign file's folder)", _resolve), None)
    journal: Path | None = _key(_Check("a path (relative to the campaign file's folder)", _resolve), None)
    models: tuple[ModelSpec, ...]
    budget: Budget = field(default_factory=Budget)
    bank: BankSpec | None = None
    faq: FaqSpec | None = None
    scope: ScopeSpec | None = None
    judge: JudgeSpec | None = None
    kpi: KpiSpec | None = None
    siren: SirenSpec | None = None
    compare: CompareSpec | None = None
    source: Path | None = field(default=None, compare=False)
    delta: float = field(init=False)

    def __post_init__(self) -> None:
        # rounded so that 0.95 gives delta 0.05, not 0.050000000000000044, in reports and fingerprints
        object.__setattr__(self, "delta", round(1.0 - self.confidence, 12))
        if self.out is None:
            object.__setattr__(self, "out", Path(f"{self.name}-report"))

    def sections(self) -> list[str]:
        """The method sections present, in the order they run (:data:`SECTIONS`)."""
        return [s for s in SECTIONS if getattr(self, s) is not None]

    def to_dict(self) -> dict:
        """The campaign as JSON-safe data laid out like the file (paths as strings; keys only by env var name)."""
        out: dict[str, Any] = {
            "campaign": {k: _plain(getattr(self, k))
                         for k in ("name", "seed", "confidence", "delta", "out", "journal")},
            "budget": _plain(self.budget),
            "model": [_plain(m) for m in self.models],
        }
        out.update({s: _plain(getattr(self, s)) for s in ("bank", *SECTIONS) if getattr(self, s) is not None})
        return out

    def to_file_data(self) -> dict:
        """:meth:`to_dict` as a campaign file would hold it (no derived ``delta``, no unset keys): what
        :func:`parse_campaign` reads back into the same campaign (``assay eval --resume`` reads it from the journal)."""
        def keep(v: Any) -> Any:
            if isinstance(v, dict):
                return {k: keep(x) for k, x in v.items() if x is not None}
            if isinstance(v, list):
                return [keep(x) for x in v]
            return v

        out = keep(self.to_dict())
        out["campaign"].pop("delta", None)
        return out

    def fingerprint(self) -> str:
        """16 hex characters of the SHA-256 of the canonical :meth:`to_dict` JSON: equal for the same campaign."""
        canonical = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"), allow_nan=False)
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def _plain(value: Any) -> Any:
    if is_dataclass(value):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return str(value) if isinstance(value, Path) else value


_PARTS: dict[str, type] = {"bank": BankSpec, "faq": FaqSpec, "scope": ScopeSpec, "judge": JudgeSpec,
                           "kpi": KpiSpec, "siren": SirenSpec, "compare": CompareSpec}


# -- Reading and validating -------------------------------------------------------------------------------------------


def _show(v: Any) -> str:
    if isinstance(v, dict):
        return "a table"
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _checks(cls: type) -> dict[str, Any]:
    return {f.name: f for f in fields(cls) if "check" in f.metadata}


class _Reader:
    """Validates one campaign's raw data; every error names ``source`` and the key path."""

    def __init__(self, source: str, base: Path, path: Path | None = None) -> None:
        self.source, self.base, self.path = source, base, path

    def error(self, message: str) -> AssayInputError:
        return AssayInputError(f"{self.source}: {message}")

    def table(self, raw: Any, cls: type, where: str) -> dict:
        """The checked keys of one table, for ``cls(**...)``; absent optional keys keep the dataclass default."""
        spec, dot = _checks(cls), (" ." if where.startswith("[[") else ".")
        if not isinstance(raw, dict):
            raise self.error(f"{where} must be a table of keys ({', '.join(spec)}); got {_show(raw)}")
        for key in raw:
            if key not in spec:
                raise self.error(f"unknown key {where}{dot}{key}{_suggest(key, spec)}; {where} takes: "
                                 f"{', '.join(spec)}")
        out = {}
        for key, f in spec.items():
            check = f.metadata["check"]
            if key not in raw:
                if f.default is MISSING:
                    raise self.error(f"{where}{dot}{key} is required: {check.what}")
                continue
            try:
                out[key] = check.conv(raw[key], self.base)
            except _Bad as e:
                raise self.error(f"{where}{dot}{key} must be {check.what}; got {_show(raw[key])}{e}") from None
        return out

    def refuse_secrets(self, data: Mapping) -> None:
        # before any other check, so that no later message can echo a key pasted into the file
        stack: list[tuple[Any, str]] = [(data, "")]
        while stack:
            value, where = stack.pop()
            if isinstance(value, str) and value.startswith("sk-") and len(value) > 20:
                raise self.error(f"{where} looks like an API key; never write a key in the campaign file: put it in "
                                 "an environment variable and give that variable's name as api_key_env "
                                 "(e.g. api_key_env = \"OPENAI_API_KEY\")")
            if isinstance(value, dict):
                for k, v in value.items():
                    stack.append((k, f"a key of {where}" if where else "a top-level key"))
                    if not where:
                        stack.append((v, f"[{k}]" if isinstance(v, (dict, list)) else str(k)))
                    else:
                        stack.append((v, f"{where}{' .' if where.startswith('[[') else '.'}{k}"))
            elif isinstance(value, list):
                section = re.fullmatch(r"\[([^\[\]]*)\]", where)
                stack.extend((v, f"[[{section.group(1)}]] #{i}" if section and isinstance(v, dict) else f"{where} #{i}")
                             for i, v in enumerate(value, 1))

    def campaign(self, data: Any) -> Campaign:
        if not isinstance(data, Mapping):
            raise self.error(f"a campaign file is a table of sections; got {_show(data)}")
        self.refuse_secrets(data)
        known = ("campaign", "budget", "model", *_PARTS)
        for key in data:
            if key not in known:
                owners = [f"[{s}]" for s, cls in (("campaign", Campaign), ("model", ModelSpec), *_PARTS.items())
                          if key in _checks(cls)]
                hint = f" (a key of {' or '.join(owners)}?)" if owners else _suggest(key, known)
                raise self.error(f"unknown section [{key}]{hint}; sections: [campaign], [budget], [[model]], "
                                 f"{', '.join(f'[{s}]' for s in _PARTS)}")
        if "campaign" not in data:
            raise self.error("the [campaign] section is required (at least: name = \"...\")")
        head = self.table(data["campaign"], Campaign, "[campaign]")
        head.setdefault("out", self.base / f"{head['name']}-report")
        budget = Budget(**self.table(data.get("budget", {}), Budget, "[budget]"))
        models = self.models(data.get("model"))
        parts = {s: cls(**self.table(data[s], cls, f"[{s}]")) for s, cls in _PARTS.items() if s in data}
        self.cross_check(models, parts)
        return Campaign(models=models, budget=budget, source=self.path, **head, **parts)

    def models(self, raw: Any) -> tuple[ModelSpec, ...]:
        if raw is None:
            raise self.error("at least one [[model]] block is required (name, endpoint, model)")
        if isinstance(raw, dict):
            raise self.error("models are an array of tables: write each one as [[model]] (two brackets), not [model]")
        if not isinstance(raw, list) or not raw:
            raise self.error(f"[[model]] must be one or more [[model]] blocks; got {_show(raw)}")
        models: list[ModelSpec] = []
        for i, block in enumerate(raw, 1):
            m = ModelSpec(**self.table(block, ModelSpec, f"[[model]] #{i}"))
            for j, earlier in enumerate(models, 1):
                if earlier.name == m.name:
                    raise self.error(f"[[model]] #{i} .name {m.name!r} is already the name of [[model]] #{j}; "
                                     "each model needs its own name (it labels the report)")
            models.append(m)
        return tuple(models)

    def cross_check(self, models: tuple[ModelSpec, ...], parts: dict) -> None:
        present = [s for s in SECTIONS if s in parts]
        if not present:
            raise self.error(f"a campaign needs at least one method section: {', '.join(f'[{s}]' for s in SECTIONS)}")
        need_bank = [f"[{s}]" for s in present if s != "scope"]
        if need_bank and "bank" not in parts:
            raise self.error(f"{', '.join(need_bank)} ask{'s' if len(need_bank) == 1 else ''} questions from an item "
                             "bank: add a [bank] section with its path")
        bank, kpi = parts.get("bank"), parts.get("kpi")
        for i, m in enumerate(models, 1):
            if m.stream and m.completions:
                raise self.error(f"[[model]] #{i} .stream: streaming (to measure the time to the first token) is "
                                 "for chat models; leave it out with completions = true")
            if "{choices}" in m.template and (bank is None or bank.choices_col is None):
                raise self.error(f"[[model]] #{i} .template uses {{choices}}: name the bank's column of answer "
                                 "options with [bank].choices_col")
        if kpi is not None:
            if kpi.select == "top_k" and kpi.k is None:
                raise self.error("[kpi].k is required with select = 'top_k': a whole number >= 1")
            if kpi.select != "top_k" and kpi.k is not None:
                raise self.error(f"[kpi].k is only used with select = 'top_k'; got select = {kpi.select!r}")
            if kpi.k is not None and kpi.k > len(models):
                raise self.error(f"[kpi].k must be at most the number of models ({len(models)}); got {kpi.k}")
            for i, m in enumerate(models, 1):
                if "cost" in kpi.metrics and m.price_in <= 0 and m.price_out <= 0:
                    raise self.error(f"[kpi].metrics has 'cost', but [[model]] #{i} ({m.name!r}) has no price: give "
                                     "its price_in / price_out (dollars per million tokens) or drop 'cost'")
        if parts.get("compare") is not None and len(models) < 2:
            raise self.error("[compare] compares the [[model]] blocks: it needs at least 2 [[model]] blocks; got "
                             f"{len(models)}")
        cmp_ = parts.get("compare")
        if cmp_ is not None:
            if cmp_.goal == "top-k" and cmp_.k is None:
                raise self.error("[compare].k is required with goal = 'top-k': how many models the top set holds")
            if cmp_.goal != "top-k" and cmp_.k is not None:
                raise self.error(f"[compare].k is only used with goal = 'top-k'; got goal = {cmp_.goal!r}")
            if cmp_.k is not None and cmp_.k >= len(models):
                raise self.error(f"[compare].k must be less than the number of models ({len(models)}); got {cmp_.k}")
        siren = parts.get("siren")
        if siren is not None and len(models) < 2:
            raise self.error("[siren] searches over the [[model]] configurations: it needs at least 2 [[model]] "
                             f"blocks; got {len(models)}")
        if siren is not None and siren.budgets[-1] > len(models):
            raise self.error(f"[siren].budgets can try at most the {len(models)} [[model]] configurations; got "
                             f"{list(siren.budgets)}")


def parse_campaign(data: Mapping, *, source: str | os.PathLike = "campaign", base: str | os.PathLike | None = None,
                   path: Path | None = None) -> Campaign:
    """Validate already-parsed campaign data (a TOML document as a dict) into a :class:`Campaign`.

    Parameters
    ----------
    data : mapping
        The campaign document.
    source : str or path-like, default "campaign"
        Names the file in error messages.
    base : str or path-like, optional
        Relative paths are resolved against it (default: the current directory).
    path : Path, optional
        Recorded as :attr:`Campaign.source`.

    Returns
    -------
    Campaign
        The validated campaign.

    Raises
    ------
    AssayInputError
        When the data is not a valid campaign (the message names ``source``).

    Examples
    --------
    >>> c = parse_campaign({"campaign": {"name": "t", "seed": 5}, "scope": {"budget": 5},
    ...                     "model": [{"name": "a", "endpoint": "http://127.0.0.1:9/v1", "model": "m"}]})
    >>> c.name, c.seed, [m.name for m in c.models], c.sections()
    ('t', 5, ['a'], ['scope'])
    """
    folder = Path(os.path.abspath(base if base is not None else os.getcwd()))
    return _Reader(str(source), folder, path).campaign(data)


def load_campaign(path: str | os.PathLike) -> Campaign:
    """Read and validate a campaign file (TOML); relative paths in it are resolved against its folder.

    Parameters
    ----------
    path : str or os.PathLike
        The campaign file.

    Returns
    -------
    Campaign
        The validated campaign (:func:`parse_campaign`).

    Raises
    ------
    AssayInputError
        If the file does not exist, is a directory, cannot be read, is not UTF-8 or not valid TOML (naming the line
        and column), or the campaign is not valid.
    """
    label, p = str(path), Path(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise AssayInputError(f"{label}: no such campaign file") from None
    except IsADirectoryError:
        raise AssayInputError(f"{label}: is a directory, not a campaign file (give the .toml file)") from None
    except OSError as e:
        raise AssayInputError(f"{label}: cannot be read ({e.strerror or e})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise AssayInputError(f"{label}: not UTF-8 text (byte {e.start}); a campaign file is TOML") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        message, line, col = str(e), getattr(e, "lineno", None), getattr(e, "colno", None)
        at = re.search(r"\s*\(at line (\d+), column (\d+)\)$", message)
        if at:  # Python < 3.14 has the position only in the message
            line, col, message = int(at.group(1)), int(at.group(2)), message[:at.start()]
        place = f", line {line}, column {col}" if line is not None else ""
        raise AssayInputError(f"{label}{place}: not valid TOML: {message}") from None
    where = p.resolve()
    return parse_campaign(data, source=label, base=where.parent, path=where)
