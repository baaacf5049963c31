"""reasoning-gym adapter (optional extra ``pip install 'assay[reasoning-gym]'``): any task by name, and Grid Reasoning.

``ReasoningGymGenerator("shortest_path")`` turns a configuration into one reasoning-gym item: a configuration key
``x`` sets the task's config field ``x``, or pins both ``min_x`` and ``max_x`` to the value (so a template fixes
e.g. the grid size instead of a range). Each instance is generated with ``size=1`` and a seed drawn from the rng,
so it is a pure function of ``(config, rng)``. Scoring passes the answer extracted from the last ``\\boxed{}``
(or a final "Answer: ...", else what :func:`assay.models.extract.extract_statement` reads: "the answer is X",
``#### X``, an equation's result on the last line; small models rarely box their answer) to the task's own
``score_answer`` UNCHANGED: no lower-casing, no comma stripping.
(An earlier version normalised every answer as QuickScope App. B.3 does for its two grid tasks; that turned
correct answers into wrong ones on course_schedule, syllogism, word_sorting and half of sentence_reordering,
and a wrong scorer is a false "certified hard".) A box whose braces do not balance (a JSON answer with a "}" inside
a string, where brace counting closes the box early) is read up to the last "}" of the text when that is JSON. An answer is correct only at score 1.0 (shortest_path gives 0.5
for a valid longer path; the generic substring rule gives partial credit to padded answers); a scorer that
raises on the answer scores it 0.0 (wrong). No extractable answer -> ``None`` (unparseable).

Tasks: every reasoning-gym task except those in :data:`EXCLUDED`, each refused with its reason: tasks without a
reference answer (their scorer validates a solution, so it cannot be checked against an oracle) and tasks whose
scorer accepts wrong answers. ``tests/test_benchmarks_rg.py`` checks every offered task: the oracle answer scores
1.0 on 20 generated instances and no wrong answer does.

``GridGenerator`` (registered as ``grid``) is QuickScope's Grid Reasoning benchmark (App. C): ``task`` in
{shortest_path, largest_island}; ``rows``, ``cols`` in 5..25; ``p_blocked`` (shortest_path) in [0.1, 0.9];
``num_islands`` 1..10 and ``island_size`` 1..20 (largest_island; reasoning-gym draws each island as a random walk
of that length, so islands may merge). Complexity = log2(rows * cols).

The default space of ``reasoning_gym:<task>`` for other tasks has no parameters to search: pass ``--space``.
"""

from __future__ import annotations

import copy
import math
import re
from typing import Any, Mapping

import numpy as np

from ..errors import AssayInputError
from . import Instance, register_generator

__all__ = ["ReasoningGymGenerator", "GridGenerator", "EXCLUDED", "offered_tasks"]

#: reasoning-gym tasks the adapter refuses, and why (checked against reasoning-gym 0.1.x)
EXCLUDED: dict[str, str] = {
    "composite": "a mixture of other tasks configured by a list of datasets; search the tasks themselves",
    "boxnet": "no reference answer (the scorer validates a plan), so its scorer cannot be checked against an oracle",
    "graph_color": "no reference answer (the scorer validates a colouring), so its scorer cannot be checked against an oracle",
    "propositional_logic": "no reference answer (the scorer validates a proof), so its scorer cannot be checked against an oracle",
    "rubiks_cube": "no reference answer (the scorer validates a move sequence), so its scorer cannot be checked against an oracle",
    "rush_hour": "no reference answer (the scorer validates a move sequence), so its scorer cannot be checked against an oracle",
    "game_of_life_halting": "reasoning-gym's scorer gives 1.0 to any non-empty answer (bool('False') is True)",
    "puzzle24": "reasoning-gym's scorer accepts any expression equal to 24, even one built from numbers other than "
                "the four given",
}

_INSTRUCTION = "\n\nThink step by step, then give your final answer inside \\boxed{}."


def _rg():
    try:
        import reasoning_gym
    except ImportError:
        raise AssayInputError("the reasoning-gym generators need the optional extra: pip install 'assay[reasoning-gym]'") from None
    return reasoning_gym


def offered_tasks() -> list[str]:
    """The reasoning-gym tasks this adapter offers (every installed task not in :data:`EXCLUDED`).

    Returns
    -------
    list of str
        The task names, sorted.
    """
    _rg()
    from reasoning_gym.factory import DATASETS

    return sorted(t for t in DATASETS if t not in EXCLUDED)


_BOX_OPEN = re.compile(r"\\(?:boxed|fbox)\s*\{")


def _extract(text: str | None) -> str | None:
    """The final answer as written: the last box's content (stripped, otherwise unchanged), else "Answer: ..."."""
    from ..models.extract import extract_answer, extract_boxed, extract_statement

    if text is None:
        return None
    ans = extract_boxed(text)
    opens = list(_BOX_OPEN.finditer(text))
    if ans is not None and opens and "{" in ans:
        # a JSON answer with braces inside its strings closes the box too early by brace counting: when the
        # text up to the last "}" is valid JSON and the counted content is not, the JSON is the answer
        import json

        rest = text[opens[-1].end():]
        longer = rest[:rest.rfind("}")].strip()
        if longer != ans:
            try:
                json.loads(ans)
            except ValueError:
                try:
                    json.loads(longer)
                    ans = longer
                except ValueError:
                    pass
    if ans is None:
        if opens:
            rest = text[opens[-1].end():]
            if rest.strip() == "}":  # an empty box is an empty answer
                return ""
            close = rest.rfind("}")
            if close > 0:  # unbalanced braces inside the answer: up to the last closing brace
                ans = rest[:close].strip() or None
    if ans is None:
        ans = extract_answer(text)
    if ans is None:  # no box and no "Answer:": an answer stated in words or an equation's result
        ans = extract_statement(text)
    return ans


#: tasks whose dataset reads its data at construction whatever the seed and draws item ``idx`` from ``Random(seed +
#: idx)`` alone (reasoning-gym 0.1.x): one dataset is built per config and copied with each instance's seed, which
#: gives the instance a dataset built with that seed would (tested) without reading the data again (arc_agi: 0.5 s a
#: construction, 2 ms an instance)
SEED_FREE_INIT = frozenset({"arc_agi", "group_anagrams", "figlet_font"})


class ReasoningGymGenerator:
    """One reasoning-gym task as a QuickScope generator (see the module docstring)."""

    def __init__(self, task: str, *, instruction: str = _INSTRUCTION, **fixed: Any) -> None:
        rg = _rg()
        from reasoning_gym.factory import DATASETS

        if task in EXCLUDED:
            raise AssayInputError(f"reasoning-gym task {task!r} is not offered: {EXCLUDED[task]}")
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
        self._datasets: dict[str, Any] = {}

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
            if self.task in SEED_FREE_INIT:  # one dataset per config, copied with this instance's seed
                key = repr(sorted(fields.items()))
                if key not in self._datasets:
                    self._datasets[key] = rg.create_dataset(self.task, **fields, size=1, seed=0)
                ds = copy.copy(self._datasets[key])
                ds.seed = seed
            else:
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
        try:
            s = float(self._score_fn(ans, instance.metadata["entry"]))
        except Exception:  # the task's scorer cannot read this answer (e.g. letters for a factorisation): wrong
            return 0.0
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
        from .worlds import grid_space

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
