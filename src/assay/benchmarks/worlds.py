"""Simulated worlds with a known truth, for validating QuickScope without an LLM (studies, tests, the demo).

A world is a search space plus ``truth(config) -> theta`` in [0, 1]: a ticket for configuration x returns
utility 1 with probability theta(x) (an error), else 0. Because theta is known, certificates, bound coverage and
the true hardness of each method's top list can be checked exactly.

* ``dyval``: the 4,440-template DyVal space with the error rate the research notes used to run the released
  code (notes quickscope.md Sec. 9): theta = sigmoid(1.2 (depth - 7) + 0.3 (children - 2) +
  0.2 extra_links + 0.1 add_rand_desc + 0.15 [order = random] + offset(type)), offsets arithmetic 0,
  linear_equation -1, bool_logic -2, deductive -3, abductive -2.5. 73 templates have theta >= 0.9; max 0.986.
* ``dyval-ceiling``: the same, with every arithmetic template of depth >= 9 at theta = 1 (as in the paper's real
  DyVal runs, where deep arithmetic templates were failed every time): certification becomes possible.
* ``plateau``: a 600-template world where 400 templates sit just below tau (theta = 0.86-0.89) and 20 above
  (0.99): a flawed bound certifies the plateau; a valid one must not.
* ``grid``: QuickScope's Grid Reasoning space (shortest_path / largest_island, rows and cols 5-25, a continuous
  blocking probability, island count and size), with a hardness that grows with the grid's area and, for
  shortest_path, peaks at mid blocking (high blocking makes "infeasible" an easy answer); written here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Mapping

from ..errors import AssayInputError
from ..quickscope.space import Categorical, Float, Integer, SearchSpace

__all__ = ["World", "get_world", "world_names", "grid_space", "plateau_space", "dyval_truth", "dyval_ceiling_truth",
           "grid_truth", "plateau_truth"]

_OFFSET = {"arithmetic": 0.0, "linear_equation": -1.0, "bool_logic": -2.0, "deductive_logic": -3.0, "abductive_logic": -2.5}


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z))


def dyval_truth(c: Mapping) -> float:
    """The error rate theta of the ``dyval`` world for a DyVal template.

    theta = sigmoid(1.2 (depth - 7) + 0.3 (children - 2) + 0.2 extra_links + 0.1 add_rand_desc
    + 0.15 [order = random] + offset(type)) (see the module docstring).

    Parameters
    ----------
    c : Mapping
        A DyVal configuration: ``dataset_type``, ``depth``, ``children``, ``extra_links``, ``add_rand_desc`` and
        ``order``.

    Returns
    -------
    float
        theta, in (0, 1).

    Examples
    --------
    >>> c = {"dataset_type": "arithmetic", "depth": 9, "children": 2, "extra_links": 0, "add_rand_desc": 0,
    ...      "order": "random"}
    >>> round(dyval_truth(c), 4)
    0.9276
    """
    z = (1.2 * (c["depth"] - 7) + 0.3 * (c["children"] - 2) + 0.2 * c["extra_links"] + 0.1 * c["add_rand_desc"]
         + 0.15 * (c["order"] == "random") + _OFFSET[c["dataset_type"]])
    return _sigmoid(z)


def dyval_ceiling_truth(c: Mapping) -> float:
    """The error rate theta of the ``dyval-ceiling`` world.

    theta = 1 for every arithmetic template of depth >= 9, else :func:`dyval_truth`.

    Parameters
    ----------
    c : Mapping
        A DyVal configuration (as for :func:`dyval_truth`).

    Returns
    -------
    float
        theta, in (0, 1].
    """
    if c["dataset_type"] == "arithmetic" and c["depth"] >= 9:
        return 1.0
    return dyval_truth(c)


def grid_space() -> SearchSpace:
    """QuickScope's Grid Reasoning space (App. C): task, rows, cols, then task-specific parameters.

    Returns
    -------
    SearchSpace
        ``task`` (shortest_path or largest_island), ``rows`` and ``cols`` (5-25), ``p_blocked`` (0.1-0.9, for
        shortest_path), ``num_islands`` (1-10) and ``island_size`` (1-20) (for largest_island).
    """
    return SearchSpace([
        Categorical("task", ["shortest_path", "largest_island"]),
        Integer("rows", 5, 25),
        Integer("cols", 5, 25),
        Float("p_blocked", 0.1, 0.9, when={"task": ["shortest_path"]}),
        Integer("num_islands", 1, 10, when={"task": ["largest_island"]}),
        Integer("island_size", 1, 20, when={"task": ["largest_island"]}),
    ])


def grid_truth(c: Mapping) -> float:
    """The error rate theta of the ``grid`` world.

    Hardness grows with the grid's area (log2 of rows * cols) and, for shortest_path, peaks at mid blocking
    (p_blocked = 0.4).

    Parameters
    ----------
    c : Mapping
        A configuration of :func:`grid_space`.

    Returns
    -------
    float
        theta, in (0, 1).
    """
    area = math.log2(c["rows"] * c["cols"])  # 4.64 .. 9.29
    if c["task"] == "shortest_path":
        p = c["p_blocked"]
        z = 1.6 * (area - 8.0) + 1.5 - 12.0 * (p - 0.4) ** 2
    else:
        z = 1.3 * (area - 8.0) + 0.25 * (c["num_islands"] - 5) + 0.08 * (c["island_size"] - 10)
    return _sigmoid(z)


def plateau_space() -> SearchSpace:
    """The ``plateau`` world's space: one integer ``template`` in 0-599.

    Returns
    -------
    SearchSpace
        The 600-template space.
    """
    return SearchSpace([Integer("template", 0, 599)])


def plateau_truth(c: Mapping) -> float:
    """The error rate theta of the ``plateau`` world.

    Templates 0-19 have theta = 0.99, templates 20-419 sit just below tau (0.86, 0.87, 0.88, 0.89 in turn) and the
    rest have 0.3.

    Parameters
    ----------
    c : Mapping
        A configuration of :func:`plateau_space`.

    Returns
    -------
    float
        theta.

    Examples
    --------
    >>> plateau_truth({"template": 25})
    0.87
    """
    t = c["template"]
    if t < 20:
        return 0.99
    if t < 420:
        return 0.86 + 0.03 * ((t - 20) % 4) / 3  # 0.86, 0.87, 0.88, 0.89
    return 0.3


@dataclass(frozen=True)
class World:
    """A search space and the true error rate ``truth(config)`` of a simulated model on it."""

    name: str
    space_fn: Callable[[], SearchSpace]
    truth: Callable[[Mapping], float]
    description: str

    def space(self) -> SearchSpace:
        return self.space_fn()


def _dyval_space() -> SearchSpace:
    from .dyval import DyValGenerator

    return DyValGenerator().space()


_WORLDS = {
    "dyval": World("dyval", _dyval_space, dyval_truth, "DyVal space, research-notes error rate (max 0.986)"),
    "dyval-ceiling": World("dyval-ceiling", _dyval_space, dyval_ceiling_truth,
                           "DyVal space, deep arithmetic always failed (theta = 1)"),
    "grid": World("grid", grid_space, grid_truth, "Grid Reasoning space (continuous p_blocked), area-driven hardness"),
    "plateau": World("plateau", plateau_space, plateau_truth, "600 templates: 400 just below 0.9, 20 at 0.99"),
}


def world_names() -> list[str]:
    """The names of the simulated worlds, sorted.

    Returns
    -------
    list of str
        The names :func:`get_world` accepts.

    Examples
    --------
    >>> world_names()
    ['dyval', 'dyval-ceiling', 'grid', 'plateau']
    """
    return sorted(_WORLDS)


def get_world(name: str) -> World:
    """The simulated world named ``name``.

    Parameters
    ----------
    name : str
        One of :func:`world_names`.

    Returns
    -------
    World
        Its search space and true error rate.

    Raises
    ------
    AssayInputError
        If no world has that name.

    Examples
    --------
    >>> get_world("plateau").description
    '600 templates: 400 just below 0.9, 20 at 0.99'
    """
    if name not in _WORLDS:
        raise AssayInputError(f"unknown simulated world {name!r}; available: {', '.join(sorted(_WORLDS))}")
    return _WORLDS[name]
