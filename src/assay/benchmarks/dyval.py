"""DyVal-style reasoning questions generated from random DAGs (registered as ``"dyval"``).

Written from the description in Zhu et al., "DyVal: Dynamic Evaluation of Large Language Models for Reasoning
Tasks" (ICLR 2024) and QuickScope's Appendix C template space; no code was taken from promptbench. Offline,
standard library + numpy only, and a pure function of ``(config, rng)``: all randomness comes from the
``numpy.random.Generator`` passed in (never Python's ``random`` or numpy's global state).

Template space (:meth:`DyValGenerator.space`, 4,440 valid templates)::

    dataset_type   arithmetic | linear_equation | bool_logic | deductive_logic | abductive_logic
    depth          2..10      levels of internal nodes above the leaves (see "Graphs")
    children       2..4       children of an n-ary internal node
    extra_links    0..3       extra DAG links tried per n-ary internal node
    add_rand_desc  0..3       irrelevant descriptions added (one sentence each)
    order          topological | reversed | random   (order of the description lines)
    forbidden: depth >= 8 with children in {3, 4}; depth == 7 with children == 4; depth >= 8 with extra_links in {2, 3}

Graphs
------
* **Depth convention**: a tree with ``depth = d`` has its root at level 0 and its leaves at level ``d``; every
  root-to-leaf tree path passes through exactly ``d`` internal nodes. Each internal node is unary with probability
  1/3 (one child: ``sqrt``/``square`` for arithmetic, ``not`` for bool_logic, a one-literal rule for the logic
  types) and otherwise has ``children`` children. The node count is therefore at most
  ``(children^(d+1) - 1) / (children - 1)`` (2,047 at depth 10 with 2 children, 5,461 at depth 6 with 4) and about
  ``(2/3 * children + 1/3)^d`` leaves on average (linear_equation has two such graphs).
* **Extra links**: the tree's nodes are put in a random topological order (a random linear extension: children
  before parents); each n-ary internal node ``u`` then tries ``extra_links`` times to gain an extra child drawn
  uniformly from the nodes placed before it (never an ancestor, so the graph stays acyclic), skipping a draw that
  is already a child or that would make ``u``'s value invalid (division by ~0, overflow). Unary nodes never receive
  extra links. Node values are computed in that same order, so every value is final when a parent uses it.
* **Values stay valid by construction** (rather than by rejecting whole graphs): an arithmetic node's operation is
  drawn uniformly and, if it is invalid for the children's values (``|value| > 1e6``, not finite, division by
  ``|v| < 1e-9``, square root of a negative), redrawn among the remaining operations. Only when no operation fits
  is the whole graph redrawn (at most ``max_retries`` times, then :class:`~assay.errors.AssayInputError`). The
  child of a unary node is kept ``>= -1000`` (its operation is drawn among those giving such a value), so that
  ``sqrt`` or ``square`` always applies to it.
* Node names are random 3-letter lowercase strings, distinct within an instance, never a common English word.

Dataset types
-------------
* ``arithmetic``: leaves are integers 1..10; n-ary ops ``+ - * /`` applied left to right over the children
  (``a - b - c = (a - b) - c``); unary ``sqrt`` / ``square``. Asks for the root's value; reference = float.
* ``linear_equation``: two arithmetic DAGs of the configured shape (extra links may cross between them); their root
  values are two of the six coefficients of ``a1 x + b1 y = c1, a2 x + b2 y = c2`` (positions drawn at random), the
  other four are nonzero integers in [-10, 10], redrawn until the determinant is not ~0 and ``|x| <= 1e6``. Asks for
  ``x``; the DAG descriptions precede the system.
* ``bool_logic``: leaves True/False; ``and`` / ``or`` over the children, unary ``not``. Reference "True"/"False".
* ``deductive_logic``: leaves are facts (``"xqz is true."``); internal nodes are rules
  ``"If abf is true and plk is false, then xqz is true."`` (``and`` / ``or`` over literals, or a single literal
  for unary nodes, the "If not A, then C" form being ``"If A is false, then C is ..."``), each concluding its
  node's proposition true or false. Three-valued semantics: a rule fires only when its condition is determined
  true (``and``: every literal true; ``or``: some literal true; a literal on an undetermined proposition is
  undetermined); then its conclusion holds. Otherwise (condition false or undetermined) the proposition is
  undetermined -- ``N/A`` -- since no other fact or rule concludes it. Reference "True" / "False" / "N/A".
  Balancing the labels: with purely random literals almost every deep root would be N/A, so (a) each rule's
  literal signs are, with probability 1/2, chosen to agree with the children's values when possible (all
  children determined for ``and``, one determined child for ``or``), and (b) with probability 1/2 every rule on
  a random root-to-leaf tree path is built to fire through its path child alone (an ``and`` rule whose literals
  all hold, or an ``or`` rule whose other literals are false or undetermined), so the root fires. This shapes
  the distribution only (about a third of each label at every depth); the reference is always computed from
  the stated facts and rules.
* ``abductive_logic``: the same rules; the facts of all leaves but one *target* leaf are stated, the root's value
  is stated as an observation (the root's own rule is always built to fire -- the graph is redrawn if it
  cannot -- so it is True or False), and the question asks for the target's value. The target is the end of a random root-to-leaf walk down the tree (so
  the root depends on it structurally); with probability 1/2 the path to it is pinned as in (b) above, so that
  flipping the target un-fires the root and its value can usually be inferred. Answer: both values of the target
  are tried (exact enumeration over the single unknown leaf: two evaluations of the DAG, no size limit needed); a
  value is consistent when the rules then derive exactly the observed root value (the facts and rules are
  complete, so an undetermined root contradicts the observation). One consistent value -> that value ("True" /
  "False"); both consistent -> "N/A".
* ``add_rand_desc = k``: ``k`` extra sentences about fresh nodes that nothing the question asks about depends on
  (a fact/leaf value, or a node defined from 1-2 existing nodes). In the topological order each is inserted at a
  random position after the nodes it mentions.
* ``order``: ``topological`` lists the descriptions in the topological order above (children first),
  ``reversed`` the same list reversed, ``random`` a uniform shuffle.

Question layout: line 0 is a header, lines ``1 .. metadata["n_descriptions"]`` are the descriptions (one sentence
per line; :func:`description_lines` returns them), then the question and the instruction
``Give your final answer inside \\boxed{}, ...``.

Scoring (:meth:`DyValGenerator.score`), with the extraction rules of :mod:`assay.models.extract`: numbers by
:func:`~assay.models.extract.extract_auto` (the last ``\\boxed{...}``, else ``Answer: ...``, else "the value of x is
...", else a one-line answer) and :func:`~assay.models.extract.parse_number`; labels by
:func:`~assay.models.extract.extract_label` (True / False / N/A and their synonyms, stated as the answer); ``None``
when no number / no single label is found. Numbers are compared as DyVal does, rounded to two decimals
(``decimals``): correct when the answer rounded half-up equals the reference rounded to two decimals (half-up, or
half-even at an exact tie, since either is a correct rounding), computed in decimal arithmetic on the numbers'
shortest representations. (An earlier version accepted anything within 1% relative, so 1584 and 1615 counted as
1600, which made exactly the deep arithmetic templates easier than DyVal's.) Labels are compared case-insensitively after
dropping punctuation; "N/A", "NA", "unknown", "undetermined", "cannot be determined" all mean N/A.
``complexity(config) = depth * log2(children)`` (= log2(children^depth)), QuickScope's complexity weight.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from ..errors import AssayInputError
from ..models.extract import extract_auto, extract_label, parse_number
from ..quickscope.space import Categorical, Integer, SearchSpace
from . import Instance, register_generator

__all__ = ["DyValGenerator", "DyValDag", "DATASET_TYPES", "ORDERS", "description_lines", "evaluate_logic"]

DATASET_TYPES = ("arithmetic", "linear_equation", "bool_logic", "deductive_logic", "abductive_logic")
ORDERS = ("topological", "reversed", "random")
_RANGES = {"depth": (2, 10), "children": (2, 4), "extra_links": (0, 3), "add_rand_desc": (0, 3)}
_PARAMS = ("dataset_type", "depth", "children", "extra_links", "add_rand_desc", "order")

VALUE_LIMIT = 1e6
DIV_EPS = 1e-9
UNARY_FLOOR = 1e3  # the child of a sqrt/square node is kept >= -1000 (so one of the two applies)
UNARY_PROB = 1.0 / 3.0
PIN_PROB = 0.5  # logic types: probability that the rules on a random root-to-leaf path all fire through that path
REPAIR_PROB = 0.5  # logic rules: probability that literal signs are chosen so the premise holds (when possible)

#: prompt tokens outside the description lines, and per description line (SmolLM2's tokenizer; see
#: DyValGenerator.expected_prompt_tokens)
_TOKENS_BASE = {"arithmetic": 76.0, "linear_equation": 125.0, "bool_logic": 44.0, "deductive_logic": 117.0,
                "abductive_logic": 165.0}
_TOKENS_PER_LINE = 14.0



def _expected_tokens(kind: str, depth: int, children: int, distractors: int) -> float:
    m = 1.0 / 3.0 + 2.0 / 3.0 * children
    lines = sum(m ** level for level in range(depth + 1)) * (2 if kind == "linear_equation" else 1)
    return _TOKENS_BASE[kind] + _TOKENS_PER_LINE * (lines + distractors)


_LETTERS = "abcdefghijklmnopqrstuvwxyz"
_STOP = frozenset(
    "the and not are for was you all but can has her his one our out set use its any who how why yes off let may "
    "nor new old see now two six ten end get got had him did man men say she too way day few big xor min "
    "max abs mod log sin cos tan nan inf var def sum add put run ask own per via etc".split()
)

_LEFT_TO_RIGHT = "In each statement the operations are applied from left to right (a minus b minus c means (a - b) - c)."
_NUMBER_INSTRUCTION = "Give your final answer inside \\boxed{}, for example \\boxed{42}."
_BOOL_INSTRUCTION = "Give your final answer inside \\boxed{}: \\boxed{True} or \\boxed{False}."
_LOGIC_INSTRUCTION = "Give your final answer inside \\boxed{}: \\boxed{True}, \\boxed{False} or \\boxed{N/A}."


class _Retry(Exception):
    """Internal: this graph cannot be completed validly; draw a new one."""


class _Stream:
    """Uniform draws from ``rng`` in blocks (one numpy call per 1,024 draws keeps generation fast)."""

    __slots__ = ("_rng", "_buf", "_i")

    def __init__(self, rng: np.random.Generator):
        self._rng = rng
        self._buf: list[float] = []
        self._i = 0

    def random(self) -> float:
        if self._i >= len(self._buf):
            self._buf = self._rng.random(1024).tolist()
            self._i = 0
        u = self._buf[self._i]
        self._i += 1
        return u

    def below(self, n: int) -> int:
        """Uniform integer in [0, n)."""
        return min(int(self.random() * n), n - 1)

    def coin(self) -> bool:
        return self.random() < 0.5


@dataclass
class DyValDag:
    """The generated graph (for inspection and tests; :meth:`DyValGenerator.generate_with_dag`).

    Node ``i`` has name ``names[i]``, children ``children[i]`` (tree children first, then extra links), operation
    ``ops[i]`` (``None`` for leaves) and value ``values[i]`` (float for the arithmetic types; bool for bool_logic;
    True / False / None = undetermined for the logic types, computed with the target's true value for abductive).
    ``signs[i][j]`` is the sign of the j-th literal of a logic rule (True: "child is true"), ``polarity[i]`` the
    value a fired rule concludes. ``order`` is the topological order (children before parents) used both for
    evaluation and for the "topological" description order. Distractor nodes are not part of the DAG.
    """

    kind: str
    names: list
    children: list
    ops: list
    values: list
    roots: list
    order: list
    n_tree_edges: int
    signs: list | None = None
    polarity: list | None = None
    target: int | None = None

    @property
    def n_nodes(self) -> int:
        return len(self.children)

    @property
    def n_edges(self) -> int:
        return sum(len(c) for c in self.children)

    def edges(self) -> list[tuple[str, str]]:
        """(parent, child) name pairs."""
        return [(self.names[u], self.names[c]) for u, kids in enumerate(self.children) for c in kids]

    def is_acyclic(self) -> bool:
        indeg = [0] * self.n_nodes
        for kids in self.children:
            for c in kids:
                indeg[c] += 1
        stack = [u for u in range(self.n_nodes) if indeg[u] == 0]
        seen = 0
        while stack:
            u = stack.pop()
            seen += 1
            for c in self.children[u]:
                indeg[c] -= 1
                if indeg[c] == 0:
                    stack.append(c)
        return seen == self.n_nodes


# ----------------------------------------------------------------------------------------------------------------
# graph construction
# ----------------------------------------------------------------------------------------------------------------


def _grow_tree(st: _Stream, children: list, depth: int, k: int) -> tuple[int, list]:
    """Append a tree of the given depth to ``children`` (adjacency lists); return (root, leaves)."""
    root = len(children)
    children.append([])
    frontier = [root]
    for _ in range(depth):
        nxt = []
        for u in frontier:
            m = 1 if st.random() < UNARY_PROB else k
            kids = children[u]
            for _ in range(m):
                v = len(children)
                children.append([])
                kids.append(v)
                nxt.append(v)
        frontier = nxt
    return root, frontier


def _linear_extension(st: _Stream, children: list, leaves: list) -> list:
    """A random topological order of a forest (children before parents): Kahn's algorithm, random ready node."""
    n = len(children)
    parent = [-1] * n
    pending = [0] * n
    for u, kids in enumerate(children):
        pending[u] = len(kids)
        for c in kids:
            parent[c] = u
    ready = list(leaves)
    order = []
    while ready:
        j = st.below(len(ready))
        ready[j], ready[-1] = ready[-1], ready[j]
        u = ready.pop()
        order.append(u)
        p = parent[u]
        if p >= 0:
            pending[p] -= 1
            if pending[p] == 0:
                ready.append(p)
    return order


def _step(op: str, a: float, b: float) -> float | None:
    if op == "+":
        r = a + b
    elif op == "-":
        r = a - b
    elif op == "*":
        r = a * b
    else:
        if abs(b) < DIV_EPS:
            return None
        r = a / b
    return r if abs(r) <= VALUE_LIMIT else None  # False for nan / inf too


def _unary(op: str, a: float) -> float | None:
    if op == "sqrt":
        return math.sqrt(a) if a >= 0 else None
    r = a * a
    return r if r <= VALUE_LIMIT else None


def _floored(v: float | None, lo: float) -> float | None:
    return v if v is not None and v >= lo else None


def _fold(op: str, vals: list) -> float | None:
    acc = vals[0]
    for x in vals[1:]:
        acc = _step(op, acc, x)
        if acc is None:
            return None
    return acc


def _pick_valid(st: _Stream, ops: tuple, fn) -> tuple[str, Any]:
    """Draw an op uniformly; redraw among the remaining ones while ``fn(op)`` is None."""
    left = list(ops)
    while left:
        op = left.pop(st.below(len(left)))
        v = fn(op)
        if v is not None:
            return op, v
    raise _Retry


def _literal(sign: bool, v):
    return None if v is None else (v == sign)


def _premise(op: str, lits: list):
    if op == "or":
        if any(x is True for x in lits):
            return True
        return False if all(x is False for x in lits) else None
    # "and" (and the one-literal rule "lit")
    if any(x is False for x in lits):
        return False
    return True if all(x is True for x in lits) else None


def _logic_value(op: str, signs: list, pol: bool, vals: list):
    return pol if _premise(op, [_literal(s, v) for s, v in zip(signs, vals)]) is True else None


def evaluate_logic(dag: DyValDag, override: Mapping[int, bool] | None = None) -> list:
    """Three-valued values of a deductive/abductive DAG, with some leaves' values overridden.

    Parameters
    ----------
    dag : DyValDag
        The logic DAG.
    override : Mapping of int to bool, optional
        Values replacing those of the leaves (by node index); None keeps every leaf's value.

    Returns
    -------
    list
        The value of every node, by node index.
    """
    vals = list(dag.values)
    for u in dag.order:
        if not dag.children[u]:
            if override and u in override:
                vals[u] = override[u]
            continue
        vals[u] = _logic_value(dag.ops[u], dag.signs[u], dag.polarity[u], [vals[c] for c in dag.children[u]])
    return vals


def _extra_candidate(st: _Stream, order: list, pos: int, kids: list) -> int | None:
    if pos == 0:
        return None
    for _ in range(4):
        c = order[st.below(pos)]
        if c not in kids:
            return c
    return None


def _build(st: _Stream, kind: str, depth: int, k: int, extra: int, n_trees: int, root_fire: float) -> DyValDag:
    children: list = []
    roots, leaves = [], []
    for _ in range(n_trees):
        r, lv = _grow_tree(st, children, depth, k)
        roots.append(r)
        leaves.extend(lv)
    n_tree_edges = sum(len(c) for c in children)
    target = None
    pinned: dict = {}  # logic types: node -> its child on the pinned root-to-leaf path (see the module docstring)
    if kind in ("deductive_logic", "abductive_logic"):
        pin = st.random() < PIN_PROB
        u = roots[0]
        while children[u]:
            c = children[u][st.below(len(children[u]))]
            if pin:
                pinned[u] = c
            u = c
        target = u if kind == "abductive_logic" else None
    order = _linear_extension(st, children, leaves)
    n = len(children)
    ops: list = [None] * n
    values: list = [None] * n
    logic = kind in ("deductive_logic", "abductive_logic")
    signs: list | None = [None] * n if logic else None
    polarity: list | None = [None] * n if logic else None
    root_set = set(roots)
    # A child of a unary arithmetic node must stay >= -UNARY_FLOOR so that sqrt or square applies to it.
    needs_floor = [False] * n
    for kids in children:
        if len(kids) == 1:
            needs_floor[kids[0]] = True

    for pos, u in enumerate(order):
        kids = children[u]
        if not kids:
            if kind in ("arithmetic", "linear_equation"):
                values[u] = float(1 + st.below(10))
            else:
                values[u] = st.coin()
            continue
        unary = len(kids) == 1
        if kind in ("arithmetic", "linear_equation"):
            if unary:
                a = values[kids[0]]
                op, v = _pick_valid(st, ("sqrt", "square"), lambda o: _unary(o, a))
            else:
                vals = [values[c] for c in kids]
                lo = -UNARY_FLOOR if needs_floor[u] else -VALUE_LIMIT
                op, v = _pick_valid(st, ("+", "-", "*", "/"), lambda o: _floored(_fold(o, vals), lo))
                for _ in range(extra):
                    c = _extra_candidate(st, order, pos, kids)
                    if c is None:
                        continue
                    r = _floored(_step(op, v, values[c]), lo)
                    if r is not None:  # else: skip the link (division by ~0, overflow, or below the floor)
                        kids.append(c)
                        v = r
            ops[u], values[u] = op, v
        elif kind == "bool_logic":
            if unary:
                ops[u], values[u] = "not", not values[kids[0]]
                continue
            op = "and" if st.coin() else "or"
            for _ in range(extra):
                c = _extra_candidate(st, order, pos, kids)
                if c is not None:
                    kids.append(c)
            vals = [values[c] for c in kids]
            ops[u], values[u] = op, (all(vals) if op == "and" else any(vals))
        else:
            op = "lit" if unary else ("and" if st.coin() else "or")
            if not unary:
                for _ in range(extra):
                    c = _extra_candidate(st, order, pos, kids)
                    if c is not None:
                        kids.append(c)
            vals = [values[c] for c in kids]
            sg = [st.coin() for _ in kids]
            if u in pinned and vals[kids.index(pinned[u])] is not None:
                # the rule fires through the path child alone: flipping that child un-fires it
                j = kids.index(pinned[u])
                if not unary and len(kids) > 1 and None not in vals and st.coin():
                    op, sg = "and", list(vals)
                elif not unary:
                    op = "or"
                    sg = [v is False if v is not None else s for v, s in zip(vals, sg)]
                sg[j] = vals[j]
            elif st.random() < (root_fire if u in root_set else REPAIR_PROB):
                known = [j for j, v in enumerate(vals) if v is not None]
                if op == "and":
                    if len(known) == len(vals):
                        sg = list(vals)
                elif known:  # "or" / "lit": one determined literal made true suffices
                    j = known[st.below(len(known))]
                    sg[j] = vals[j]
            pol = st.coin()
            ops[u], signs[u], polarity[u] = op, sg, pol
            values[u] = _logic_value(op, sg, pol, vals)
    return DyValDag(kind, [], children, ops, values, roots, order, n_tree_edges, signs, polarity, target)


class _Names:
    """Distinct random 3-letter lowercase names, avoiding common English words."""

    def __init__(self, st: _Stream):
        self.st = st
        self.used: set = set()

    def new(self) -> str:
        while True:
            i = self.st.below(17576)
            s = _LETTERS[i // 676] + _LETTERS[(i // 26) % 26] + _LETTERS[i % 26]
            if s not in self.used and s not in _STOP:
                self.used.add(s)
                return s


# ----------------------------------------------------------------------------------------------------------------
# text
# ----------------------------------------------------------------------------------------------------------------


def _join(names: list) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else repr(float(v))


def _arith_sentence(name: str, op: str | None, kid_names: list, value: float) -> str:
    if op is None:
        return f"The value of {name} is {_num(value)}."
    if op == "+":
        rhs = f"the sum of {_join(kid_names)}"
    elif op == "*":
        rhs = f"the product of {_join(kid_names)}"
    elif op == "-":
        rhs = " minus ".join(kid_names)
    elif op == "/":
        rhs = " divided by ".join(kid_names)
    elif op == "sqrt":
        rhs = f"the square root of {kid_names[0]}"
    else:
        rhs = f"the square of {kid_names[0]}"
    return f"The value of {name} equals {rhs}."


def _bool_sentence(name: str, op: str | None, kid_names: list, value: bool) -> str:
    if op is None:
        return f"The value of {name} is {value}."
    if op == "not":
        return f"The value of {name} equals (not {kid_names[0]})."
    return f"The value of {name} equals ({f' {op} '.join(kid_names)})."


def _tf(v: bool) -> str:
    return "true" if v else "false"


def _logic_sentence(name: str, op: str | None, kid_names: list, signs: list | None, pol: bool | None, value) -> str:
    if op is None:
        return f"{name} is {_tf(value)}."
    lits = [f"{c} is {_tf(s)}" for c, s in zip(kid_names, signs)]
    cond = lits[0] if op == "lit" else f" {op} ".join(lits)
    return f"If {cond}, then {name} is {_tf(pol)}."


def _node_sentence(dag: DyValDag, u: int) -> str:
    kid_names = [dag.names[c] for c in dag.children[u]]
    if dag.kind in ("arithmetic", "linear_equation"):
        return _arith_sentence(dag.names[u], dag.ops[u], kid_names, dag.values[u])
    if dag.kind == "bool_logic":
        return _bool_sentence(dag.names[u], dag.ops[u], kid_names, dag.values[u])
    return _logic_sentence(dag.names[u], dag.ops[u], kid_names, dag.signs[u], dag.polarity[u], dag.values[u])


def _distractor(st: _Stream, dag: DyValDag, names: _Names) -> tuple[str, list]:
    """One irrelevant sentence about a fresh node; returns (sentence, DAG nodes it mentions)."""
    name = names.new()
    n = dag.n_nodes
    if st.coin() or n < 2:
        if dag.kind in ("arithmetic", "linear_equation"):
            return _arith_sentence(name, None, [], float(1 + st.below(10))), []
        if dag.kind == "bool_logic":
            return _bool_sentence(name, None, [], st.coin()), []
        return _logic_sentence(name, None, [], None, None, st.coin()), []
    unary = st.random() < UNARY_PROB
    a = st.below(n)
    deps = [a]
    if not unary:
        b = st.below(n - 1)
        deps.append(b + (b >= a))
    kid_names = [dag.names[c] for c in deps]
    if dag.kind in ("arithmetic", "linear_equation"):
        vals = [dag.values[c] for c in deps]
        if unary:
            op = "sqrt" if st.coin() else "square"
            if _unary(op, vals[0]) is None:
                op = "square" if op == "sqrt" else "sqrt"
            if _unary(op, vals[0]) is None:  # a huge negative value: fall back to a sum with itself
                op, kid_names = "+", kid_names * 2
        else:
            ops = ["+", "-", "*", "/"]
            op = ops[st.below(4)]
            if _fold(op, vals) is None:
                op = "+"
        return _arith_sentence(name, op, kid_names, 0.0), deps
    if dag.kind == "bool_logic":
        op = "not" if unary else ("and" if st.coin() else "or")
        return _bool_sentence(name, op, kid_names, False), deps
    op = "lit" if unary else ("and" if st.coin() else "or")
    return _logic_sentence(name, op, kid_names, [st.coin() for _ in deps], st.coin(), None), deps


def _solve_linear(st: _Stream, r1: float, r2: float) -> tuple[list, list, float] | None:
    """Coefficients [a1, b1, c1, a2, b2, c2] (ints or the two roots at two random positions) and x."""
    for _ in range(20):
        coef: list = []
        for _ in range(6):
            m = 1 + st.below(10)
            coef.append(m if st.coin() else -m)
        i = st.below(6)
        j = st.below(5)
        j += j >= i
        coef[i], coef[j] = r1, r2
        a1, b1, c1, a2, b2, c2 = coef
        det = a1 * b2 - a2 * b1
        if not math.isfinite(det) or abs(det) < 1e-6 * max(1.0, abs(a1 * b2), abs(a2 * b1)):
            continue
        x = (c1 * b2 - c2 * b1) / det
        if math.isfinite(x) and abs(x) <= VALUE_LIMIT:
            return coef, [i, j], x
    return None


def _term(coef, var: str, first: bool, name: str | None) -> str:
    """One term of an equation; ``name`` is set when the coefficient is a DAG root (written by name)."""
    if name is not None:
        body = name if var == "" else f"{name} * {var}"
        return body if first else f"+ {body}"
    mag = abs(coef)
    body = f"{mag}" if var == "" else f"{mag} * {var}"
    if first:
        return body if coef > 0 else f"-{body}"
    return f"+ {body}" if coef > 0 else f"- {body}"


def description_lines(instance: Instance) -> list[str]:
    """The description sentences of a dyval question, in the order they are listed.

    Parameters
    ----------
    instance : Instance
        A question generated by the dyval generator (its metadata holds ``n_descriptions``).

    Returns
    -------
    list of str
        The ``n_descriptions`` lines following the question's first line.
    """
    n = int(instance.metadata["n_descriptions"])
    return instance.question.splitlines()[1:1 + n]


# ----------------------------------------------------------------------------------------------------------------
# the generator
# ----------------------------------------------------------------------------------------------------------------


class DyValGenerator:
    """DyVal-style DAG reasoning questions (see the module docstring for every convention)."""

    name = "dyval"

    def __init__(self, *, decimals: int = 2, max_retries: int = 100):
        if isinstance(decimals, bool) or not isinstance(decimals, int) or not (0 <= decimals <= 12):
            raise AssayInputError(f"dyval: decimals must be an integer in [0, 12]; got {decimals!r}")
        if isinstance(max_retries, bool) or not isinstance(max_retries, (int, np.integer)) or max_retries < 1:
            raise AssayInputError(f"dyval: max_retries must be a positive integer; got {max_retries!r}")
        self.decimals = int(decimals)
        self.max_retries = int(max_retries)

    def __repr__(self) -> str:
        return f"DyValGenerator(decimals={self.decimals}, max_retries={self.max_retries})"

    # -- space --------------------------------------------------------------------------------------------------

    @classmethod
    def expected_prompt_tokens(cls, config: Mapping[str, Any]) -> float:
        """The expected prompt length of a template in tokens: ``base[dataset_type] + 14 * E[lines]``.

        ``E[lines]`` is the expected number of description lines: the expected node count of the tree,
        ``sum_{l=0}^{depth} m^l`` with ``m = 1/3 + 2/3 * children`` (each internal node is unary with probability 1/3),
        twice that for ``linear_equation`` (two graphs), plus ``add_rand_desc``. The base lengths (header, question
        and instructions) and the 14 tokens per line were measured on SmolLM2's tokenizer (60 generated prompts,
        every prompt within 5% of the fit); other tokenizers differ by a few tens of percent, and the node count of a
        deep template varies widely around its mean, so this is an estimate for narrowing the space, not a bound.
        """
        cfg = cls.validate(config)
        return _expected_tokens(cfg["dataset_type"], cfg["depth"], cfg["children"], cfg["add_rand_desc"])

    @classmethod
    def space(cls, context_window: int | None = None, reserve: int = 256, fill: float = 0.8) -> SearchSpace:
        """QuickScope's DyVal template space (App. C): 4,440 valid templates.

        With ``context_window`` (the model's window in tokens), templates whose expected prompt
        (:meth:`expected_prompt_tokens`, with the most distractors) exceeds ``fill * (context_window - reserve)``
        are forbidden too, so the budget goes to questions the model can read (``reserve``: tokens kept for the
        answer). Prompts of the remaining templates that still do not fit are answered ``too_long`` by the server
        and counted as the model's failure on that question.
        """
        forbidden: list[dict] = [
            {"depth": [8, 9, 10], "children": [3, 4]},
            {"depth": 7, "children": 4},
            {"depth": [8, 9, 10], "extra_links": [2, 3]},
        ]
        if context_window is not None:
            if isinstance(context_window, bool) or not isinstance(context_window, int) or context_window <= reserve:
                raise AssayInputError(f"context_window must be an integer number of tokens > reserve ({reserve}); "
                                      f"got {context_window!r}")
            limit = fill * (context_window - reserve)
            fits = 0
            for kind in DATASET_TYPES:
                for children in range(2, 5):
                    too_deep = [d for d in range(2, 11) if _expected_tokens(kind, d, children, 3) > limit]
                    fits += 9 - len(too_deep)
                    if too_deep:
                        forbidden.append({"dataset_type": kind, "children": children, "depth": too_deep})
            if not fits:
                raise AssayInputError(f"no DyVal template fits a context window of {context_window} tokens (with "
                                      f"{reserve} kept for the answer); the shortest prompts need about "
                                      f"{_expected_tokens('bool_logic', 2, 2, 0):.0f}")
        return SearchSpace(
            [
                Categorical("dataset_type", list(DATASET_TYPES)),
                Integer("depth", 2, 10),
                Integer("children", 2, 4),
                Integer("extra_links", 0, 3),
                Integer("add_rand_desc", 0, 3),
                Categorical("order", list(ORDERS)),
            ],
            forbidden=forbidden,
        )

    @staticmethod
    def validate(config: Mapping[str, Any]) -> dict:
        """The config as a plain dict of Python values; AssayInputError naming the offending parameter."""
        if not isinstance(config, Mapping):
            raise AssayInputError(f"dyval: a configuration must be a dict; got {type(config).__name__}")
        missing = [p for p in _PARAMS if p not in config]
        if missing:
            raise AssayInputError(f"dyval: configuration lacks parameter(s) {', '.join(missing)}")
        unknown = sorted(str(k) for k in config if k not in _PARAMS)
        if unknown:
            raise AssayInputError(f"dyval: unknown parameter(s) {', '.join(unknown)}; expected {', '.join(_PARAMS)}")
        out: dict = {}
        for key, choices in (("dataset_type", DATASET_TYPES), ("order", ORDERS)):
            v = config[key]
            if not isinstance(v, str) or v not in choices:
                raise AssayInputError(f"dyval: parameter {key!r} = {v!r} must be one of {', '.join(choices)}")
            out[key] = v
        for key, (lo, hi) in _RANGES.items():
            v = config[key]
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or not lo <= v <= hi:
                raise AssayInputError(f"dyval: parameter {key!r} = {v!r} must be an integer in {lo}..{hi}")
            out[key] = int(v)
        d, k, e = out["depth"], out["children"], out["extra_links"]
        if d >= 8 and k >= 3:
            raise AssayInputError(
                f"dyval: parameter 'children' = {k} is forbidden with depth = {d} (depth >= 8 needs children = 2)")
        if d == 7 and k == 4:
            raise AssayInputError("dyval: parameter 'children' = 4 is forbidden with depth = 7")
        if d >= 8 and e >= 2:
            raise AssayInputError(
                f"dyval: parameter 'extra_links' = {e} is forbidden with depth = {d} (depth >= 8 needs extra_links <= 1)")
        return {p: out[p] for p in _PARAMS}

    @classmethod
    def complexity(cls, config: Mapping[str, Any]) -> float:
        """log2(children^depth) = depth * log2(children)."""
        cfg = cls.validate(config)
        return float(cfg["depth"] * math.log2(cfg["children"]))

    # -- generation ---------------------------------------------------------------------------------------------

    def generate(self, config: Mapping[str, Any], rng: np.random.Generator) -> Instance:
        return self.generate_with_dag(config, rng)[0]

    def generate_with_dag(self, config: Mapping[str, Any], rng: np.random.Generator) -> tuple[Instance, DyValDag]:
        """The instance and the DAG behind it (same draws as :meth:`generate`)."""
        cfg = self.validate(config)
        if not isinstance(rng, np.random.Generator):
            raise AssayInputError(f"dyval: rng must be a numpy.random.Generator; got {type(rng).__name__}")
        st = _Stream(rng)
        kind = cfg["dataset_type"]
        for _ in range(self.max_retries):
            try:
                return self._attempt(st, cfg)
            except _Retry:
                continue
        raise AssayInputError(f"dyval: no valid graph after {self.max_retries} attempts for config {cfg} ({kind})")

    def _attempt(self, st: _Stream, cfg: dict) -> tuple[Instance, DyValDag]:
        kind = cfg["dataset_type"]
        n_trees = 2 if kind == "linear_equation" else 1
        dag = _build(st, kind, cfg["depth"], cfg["children"], cfg["extra_links"], n_trees,
                     root_fire=1.0 if kind == "abductive_logic" else REPAIR_PROB)
        meta: dict = {}
        hidden: int | None = None
        if kind == "linear_equation":
            solved = _solve_linear(st, dag.values[dag.roots[0]], dag.values[dag.roots[1]])
            if solved is None:
                raise _Retry
            coef, positions, x = solved
            reference: Any = float(x)
        elif kind == "abductive_logic":
            root = dag.roots[0]
            observed = dag.values[root]
            if observed is None:
                raise _Retry
            hidden = dag.target
            ok = [t for t in (True, False) if evaluate_logic(dag, {hidden: t})[root] == observed]
            reference = str(ok[0]) if len(ok) == 1 else "N/A"
            meta["observed"] = str(observed)
        elif kind == "deductive_logic":
            v = dag.values[dag.roots[0]]
            reference = "N/A" if v is None else str(v)
        elif kind == "bool_logic":
            reference = str(bool(dag.values[dag.roots[0]]))
        else:
            reference = float(dag.values[dag.roots[0]])

        names = _Names(st)
        dag.names = [names.new() for _ in range(dag.n_nodes)]
        sentences = [_node_sentence(dag, u) for u in dag.order if u != hidden]
        pos_of = {u: i for i, u in enumerate(x for x in dag.order if x != hidden)}
        # distractors: inserted after the nodes they mention (positions refer to the growing list)
        slot = [pos_of.get(u, -1) for u in range(dag.n_nodes)]
        for _ in range(cfg["add_rand_desc"]):
            sent, deps = _distractor(st, dag, names)
            after = max((slot[c] for c in deps), default=-1)
            at = after + 1 + st.below(len(sentences) - after)
            sentences.insert(at, sent)
            for i in range(dag.n_nodes):
                if slot[i] >= at:
                    slot[i] += 1
        if cfg["order"] == "reversed":
            sentences.reverse()
        elif cfg["order"] == "random":
            for i in range(len(sentences) - 1, 0, -1):  # Fisher-Yates
                j = st.below(i + 1)
                sentences[i], sentences[j] = sentences[j], sentences[i]

        root_name = dag.names[dag.roots[0]]
        if kind == "arithmetic":
            head = "The following statements define the values of some variables."
            tail = [
                _LEFT_TO_RIGHT,
                f"What is the value of {root_name}? If it is not an integer, round it to two decimal places.",
                _NUMBER_INSTRUCTION,
            ]
        elif kind == "linear_equation":
            by_pos = {positions[0]: dag.names[dag.roots[0]], positions[1]: dag.names[dag.roots[1]]}
            t = [_term(coef[i], ("x", "y", "", "x", "y", "")[i], i % 3 != 1, by_pos.get(i)) for i in range(6)]
            eq1 = f"{t[0]} {t[1]} = {t[2]}"
            eq2 = f"{t[3]} {t[4]} = {t[5]}"
            used = " and ".join(dag.names[r] for r in dag.roots)
            head = "The following statements define the values of some variables."
            tail = [
                _LEFT_TO_RIGHT,
                f"Consider the following system of linear equations in x and y, where {used} are the variables "
                "defined above:",
                eq1,
                eq2,
                "What is the value of x? If it is not an integer, round it to two decimal places.",
                _NUMBER_INSTRUCTION,
            ]
            meta["roots"] = [dag.names[r] for r in dag.roots]
            meta["coefficients"] = [by_pos.get(i, coef[i]) for i in range(6)]
        elif kind == "bool_logic":
            head = "The following statements define the truth values of some variables."
            tail = [f"What is the value of {root_name}: True or False?", _BOOL_INSTRUCTION]
        else:
            head = ("Each three-letter name below is a proposition. The following facts and rules are everything "
                    "that is known about them.")
            rules = ("A rule applies only when its condition is known to hold; then its conclusion holds. A "
                     "proposition that is neither stated as a fact nor concluded by an applicable rule cannot be "
                     "determined (N/A).")
            if kind == "deductive_logic":
                tail = [rules,
                        f"Based only on these facts and rules, is {root_name} true, false, or N/A (cannot be "
                        "determined)?",
                        _LOGIC_INSTRUCTION]
            else:
                target = dag.names[hidden]
                tail = [f"A rule applies only when its condition is known to hold; then its conclusion holds. Apart "
                        f"from {target}, a proposition that is neither stated as a fact nor concluded by an "
                        f"applicable rule cannot be determined.",
                        f"{target} is either true or false, but its value is not stated. It is observed that "
                        f"{root_name} is {_tf(dag.values[dag.roots[0]])}, and this must follow from the facts and "
                        f"rules above together with the value of {target}.",
                        f"Given this observation, is {target} true, false, or N/A (cannot be determined)?",
                        _LOGIC_INSTRUCTION]
                meta["target"] = target
        question = "\n".join([head, *sentences, *tail])
        metadata = {
            "config": dict(cfg),
            "dataset_type": kind,
            "answer_type": "number" if kind in ("arithmetic", "linear_equation") else "label",
            "root": root_name if kind != "linear_equation" else None,
            "n_nodes": dag.n_nodes,
            "n_edges": dag.n_edges,
            "n_extra_links": dag.n_edges - dag.n_tree_edges,
            "n_descriptions": len(sentences),
            "n_distractors": cfg["add_rand_desc"],
            **meta,
        }
        return Instance(question, reference, metadata), dag

    # -- scoring ------------------------------------------------------------------------------------------------

    def score(self, text: str | None, instance: Instance) -> float | None:
        """1.0 correct, 0.0 wrong, None when no answer can be extracted (see the module docstring)."""
        if text is None:
            return None
        if not isinstance(text, str):
            raise AssayInputError(f"dyval.score expects a string (or None); got {type(text).__name__}")
        answer_type = instance.metadata.get("answer_type")
        if answer_type is None:
            answer_type = "number" if isinstance(instance.reference, (int, float)) else "label"
        if answer_type == "number":
            ans = extract_auto(text)
            x = parse_number(ans) if ans is not None else None
            if x is None or not math.isfinite(x):
                return None
            return 1.0 if same_rounded(x, float(instance.reference), self.decimals) else 0.0
        got = extract_label(text)
        if got is None:
            return None
        return 1.0 if got == _label(str(instance.reference)) else 0.0


def same_rounded(x: float, ref: float, decimals: int = 2) -> bool:
    """DyVal's number comparison: ``x`` rounded half-up to ``decimals`` equals ``ref`` rounded to ``decimals``
    (half-up, or half-even when ``ref`` sits exactly on a tie). Decimal arithmetic on ``repr``, so 2.675 is a tie."""
    from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal, InvalidOperation, localcontext

    with localcontext() as ctx:
        ctx.prec = 80
        q = Decimal(1).scaleb(-decimals)
        try:
            xd = Decimal(repr(float(x))).quantize(q, ROUND_HALF_UP)
            rd = Decimal(repr(float(ref)))
            return xd in (rd.quantize(q, ROUND_HALF_UP), rd.quantize(q, ROUND_HALF_EVEN))
        except InvalidOperation:  # astronomically large values: exact comparison
            return float(x) == float(ref)


_WRAP = re.compile(r"\\(?:text|textbf|textit|textrm|texttt|mathrm|mathbf|mathit|mbox|operatorname)\s*\{([^{}]*)\}")
_NA = frozenset({"na", "unknown", "undetermined", "undeterminable", "indeterminate", "cannotbedetermined",
                 "cannotdetermine", "notdetermined", "notapplicable"})


def _label(s: str) -> str | None:
    s = _WRAP.sub(r"\1", s)
    s = re.sub(r"[^a-z0-9]", "", s.lower())
    if s == "true":
        return "True"
    if s == "false":
        return "False"
    if s in _NA:
        return "N/A"
    return None


@register_generator("dyval")
def _factory(**kwargs: Any) -> DyValGenerator:
    try:
        return DyValGenerator(**kwargs)
    except TypeError as e:
        raise AssayInputError(f"dyval: {e}") from None
