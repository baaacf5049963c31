"""reasoning-gym adapter (optional extra ``pip install 'assay[reasoning-gym]'``): any task by name, and Grid Reasoning.

``ReasoningGymGenerator("shortest_path")`` turns a configuration into one reasoning-gym item: a configuration key
``x`` sets the task's config field ``x``, or pins both ``min_x`` and ``max_x`` to the value (so a template fixes
e.g. the grid size instead of a range). Each instance is generated with ``size=1`` and a seed drawn from the rng,
so it is a pure function of ``(config, rng)``. Scoring uses reasoning-gym's own ``score_answer`` on the answer
extracted from the last ``\\boxed{}`` (or a final "Answer: ..."), lower-cased with commas replaced by spaces
(QuickScope App. B.3); an answer is correct only at score 1.0 (shortest_path gives 0.5 for a valid longer path;
the generic substring rule gives partial credit to padded answers). No extractable answer -> ``None``
(unparseable).

``GridGenerator`` (registered as ``grid``) is QuickScope's Grid Reasoning benchmark (App. C): ``task`` in
{shortest_path, largest_island}; ``rows``, ``cols`` in 5..25; ``p_blocked`` (shortest_path) in [0.1, 0.9];
``num_islands`` 1..10 and ``island_size`` 1..20 (largest_island; reasoning-gym draws each island as a random walk
of that length, so islands may merge). Complexity = log2(rows * cols).

The default space of ``reasoning_gym:<task>`` for other tasks has no parameters to search: pass ``--space``.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

from ..errors import AssayInputError
from . import Instance, register_generator

__all__ = ["ReasoningGymGenerator", "GridGenerator"]

_INSTRUCTION = "\n\nThink step by step, then give your final answer inside \\boxed{}."


def _rg():
    try:
        import reasoning_gym
    except ImportError:
        raise AssayInputError("the reasoning-gym generators need the optional extra: pip install 'assay[reasoning-gym]'") from None
    return reasoning_gym


def _extract(text: str | None) -> str | None:
    from ..models.scoring import extract_answer, extract_boxed

    if text is None:
        return None
    ans = extract_boxed(text)
    if ans is None:
        ans = extract_answer(text)
    if ans is None:
        return None
    ans = " ".join(ans.replace(",", " ").split()).lower()
    return ans or None


class ReasoningGymGenerator:
    """One reasoning-gym task as a QuickScope generator (see the module docstring)."""

    def __init__(self, task: str, *, instruction: str = _INSTRUCTION, **fixed: Any) -> None:
        rg = _rg()
        from reasoning_gym.factory import DATASETS

        if task not in DATASETS:
            close = sorted(n for n in DATASETS if task.split("_")[0] in n)[:8]
            raise AssayInputError(f"reasoning-gym has no task {task!r}" + (f"; similar: {', '.join(close)}" if close else
                                                                           f"; {len(DATASETS)} tasks exist"))
        import dataclasses

        self.task = task
        self.name = f"reasoning_gym:{task}"
        self.instruction = instruction
        self._fields = {f.name for f in dataclasses.fields(DATASETS[task][1])}
        self.fixed = self._map(fixed)
        self._score_fn = rg.get_score_answer_fn(task)

    def _map(self, config: Mapping[str, Any]) -> dict:
        out = {}
        for k, v in config.items():
            if v is None:
                continue
            if isinstance(v, (np.integer,)):
                v = int(v)
            elif isinstance(v, np.floating):
                v = float(v)
            if k in self._fields:
                out[k] = v
            elif f"min_{k}" in self._fields and f"max_{k}" in self._fields:
                out[f"min_{k}"] = out[f"max_{k}"] = v
            elif k != "task":
                raise AssayInputError(f"reasoning-gym task {self.task!r} has no config field {k!r} (nor min_{k}/max_{k}); "
                                      f"fields: {', '.join(sorted(self._fields - {'size', 'seed'}))}")
        return out

    def space(self):
        from ..quickscope import Constant, SearchSpace

        return SearchSpace([Constant("task", self.task)])

    def generate(self, config: Mapping[str, Any], rng: np.random.Generator) -> Instance:
        rg = _rg()
        fields = {**self.fixed, **self._map(config)}
        seed = int(rng.integers(0, 2**31 - 1))
        try:
            ds = rg.create_dataset(self.task, **fields, size=1, seed=seed)
        except (AssertionError, ValueError, TypeError) as e:
            raise AssayInputError(f"reasoning-gym rejected the config {fields} for {self.task!r}: {e}") from None
        entry = ds[0]
        return Instance(str(entry["question"]) + self.instruction, entry["answer"],
                        {"task": self.task, "seed": seed, "entry": entry})

    def score(self, text: str | None, instance: Instance) -> float | None:
        ans = _extract(text)
        if ans is None:
            return None
        s = float(self._score_fn(ans, instance.metadata["entry"]))
        return 1.0 if s >= 1.0 else 0.0

    def complexity(self, config: Mapping[str, Any]) -> float:
        if "rows" in config and "cols" in config:
            return math.log2(float(config["rows"]) * float(config["cols"]))
        return 1.0


class GridGenerator:
    """QuickScope's Grid Reasoning benchmark: shortest_path + largest_island over one space."""

    name = "grid"

    def __init__(self, **kwargs: Any) -> None:
        self._gens = {t: ReasoningGymGenerator(t, **kwargs) for t in ("shortest_path", "largest_island")}

    def space(self):
        from ..quickscope.simulate import grid_space

        return grid_space()

    def generate(self, config: Mapping[str, Any], rng: np.random.Generator) -> Instance:
        task = config.get("task")
        if task not in self._gens:
            raise AssayInputError(f"grid: task must be shortest_path or largest_island; got {task!r}")
        return self._gens[task].generate(config, rng)

    def score(self, text: str | None, instance: Instance) -> float | None:
        return self._gens[instance.metadata["task"]].score(text, instance)

    def complexity(self, config: Mapping[str, Any]) -> float:
        return math.log2(float(config["rows"]) * float(config["cols"]))


@register_generator("reasoning_gym")
def _rg_factory(task: str | None = None, **kwargs: Any) -> ReasoningGymGenerator:
    if not task:
        raise AssayInputError("name the reasoning-gym task: --generator reasoning_gym:<task>, e.g. reasoning_gym:shortest_path")
    return ReasoningGymGenerator(task, **kwargs)


@register_generator("grid")
def _grid_factory(**kwargs: Any) -> GridGenerator:
    return GridGenerator(**kwargs)
