"""assay.benchmarks.dyval: the 4,440-template space, determinism, reference correctness (re-derived from the question
text by an independent parser), graph shape, description order / distractors, scoring, speed and input errors."""

import json
import math
import random
import re
import time
from collections import Counter

import numpy as np
import pytest

from assay.benchmarks import Instance, get_generator, generator_names
from assay.benchmarks import dyval
from assay.benchmarks.dyval import DATASET_TYPES, DyValGenerator, description_lines
from assay.errors import AssayInputError

GEN = DyValGenerator()
SHAPES = [(2, 2, 0), (3, 3, 1), (4, 4, 3), (6, 2, 2), (7, 3, 1), (10, 2, 1)]  # (depth, children, extra_links)
NAME = re.compile(r"^[a-z]{3}$")


def cfg(dataset_type="arithmetic", depth=3, children=2, extra_links=1, add_rand_desc=0, order="topological"):
    return dict(dataset_type=dataset_type, depth=depth, children=children, extra_links=extra_links,
                add_rand_desc=add_rand_desc, order=order)


def gen(seed=0, **kw):
    return GEN.generate(cfg(**kw), np.random.default_rng(seed))


# ------------------------------------------------------------------------------------------------------------------
# an independent reader of the question text
# ------------------------------------------------------------------------------------------------------------------


def _resolve(root, deps, compute):
    """Evaluate ``root`` of a DAG given as deps(x) / compute(x, memo), iteratively (graphs can be deep)."""
    memo, stack, steps = {}, [root], 0
    while stack:
        steps += 1
        assert steps < 1_000_000, "the definitions are cyclic"
        x = stack[-1]
        if x in memo:
            stack.pop()
            continue
        pending = [d for d in deps(x) if d not in memo]
        if pending:
            stack.extend(pending)
        else:
            memo[x] = compute(x, memo)
            stack.pop()
    return memo[root]


def _names(listing):
    return listing.replace(" and ", ", ").split(", ")


def _arith_defs(lines):
    defs = {}
    for line in lines:
        m = re.match(r"^The value of ([a-z]{3}) is (-?\d+)\.$", line)
        if m:
            defs[m[1]] = ("leaf", float(m[2]), [])
            continue
        m = re.match(r"^The value of ([a-z]{3}) equals (.+)\.$", line)
        if not m:
            continue
        rhs = m[2]
        if rhs.startswith("the sum of "):
            defs[m[1]] = ("+", None, _names(rhs[len("the sum of "):]))
        elif rhs.startswith("the product of "):
            defs[m[1]] = ("*", None, _names(rhs[len("the product of "):]))
        elif rhs.startswith("the square root of "):
            defs[m[1]] = ("sqrt", None, [rhs.split()[-1]])
        elif rhs.startswith("the square of "):
            defs[m[1]] = ("square", None, [rhs.split()[-1]])
        elif " minus " in rhs:
            defs[m[1]] = ("-", None, rhs.split(" minus "))
        elif " divided by " in rhs:
            defs[m[1]] = ("/", None, rhs.split(" divided by "))
        else:
            raise AssertionError(f"unparsed arithmetic line {line!r}")
    return defs


def _arith_value(defs, name):
    def compute(x, memo):
        op, leaf, kids = defs[x]
        if op == "leaf":
            return leaf
        vals = [memo[k] for k in kids]
        if op == "sqrt":
            assert vals[0] >= 0
            return math.sqrt(vals[0])
        if op == "square":
            return vals[0] ** 2
        acc = vals[0]
        for v in vals[1:]:
            if op == "/":
                assert v != 0
            acc = {"+": acc + v, "-": acc - v, "*": acc * v, "/": acc / v if v else None}[op]
        return acc

    return _resolve(name, lambda x: defs[x][2], compute)


def _coef(tok, defs):
    tok = tok.replace(" ", "")
    if NAME.match(tok.lstrip("+")):
        return _arith_value(defs, tok.lstrip("+"))
    return float(int(tok))


def _bool_value(lines, name):
    defs = {}
    for line in lines:
        m = re.match(r"^The value of ([a-z]{3}) is (True|False)\.$", line)
        if m:
            defs[m[1]] = ("leaf", m[2] == "True", [])
            continue
        m = re.match(r"^The value of ([a-z]{3}) equals \((.+)\)\.$", line)
        if m:
            body = m[2]
            if body.startswith("not "):
                defs[m[1]] = ("not", None, [body[4:]])
            elif " and " in body:
                defs[m[1]] = ("and", None, body.split(" and "))
            else:
                defs[m[1]] = ("or", None, body.split(" or "))

    def compute(x, memo):
        op, leaf, kids = defs[x]
        vals = [memo[k] for k in kids]
        return {"leaf": leaf, "not": (not vals[0]) if vals else None, "and": all(vals), "or": any(vals)}[op]

    return _resolve(name, lambda x: defs[x][2], compute)


def _logic_defs(lines):
    facts, rules = {}, {}
    for line in lines:
        m = re.match(r"^([a-z]{3}) is (true|false)\.$", line)
        if m:
            facts[m[1]] = m[2] == "true"
            continue
        m = re.match(r"^If (.+), then ([a-z]{3}) is (true|false)\.$", line)
        if m:
            cond = m[1]
            conn = "and" if " and " in cond else "or"
            lits = [re.fullmatch(r"([a-z]{3}) is (true|false)", part) for part in cond.split(f" {conn} ")]
            assert all(lits), line
            assert m[2] not in rules, "two rules conclude the same proposition"
            rules[m[2]] = (conn, [(lit[1], lit[2] == "true") for lit in lits], m[3] == "true")
    return facts, rules


def _logic_value(facts, rules, name):
    """Three-valued: True / False / None (cannot be determined)."""

    def deps(x):
        return [] if x in facts or x not in rules else [p for p, _ in rules[x][1]]

    def compute(x, memo):
        if x in facts:
            return facts[x]
        if x not in rules:
            return None
        conn, lits, concl = rules[x]
        vals = [None if memo[p] is None else memo[p] == sign for p, sign in lits]
        premise = all(v is True for v in vals) if conn == "and" else any(v is True for v in vals)
        return concl if premise else None

    return _resolve(name, deps, compute)


def expected_answer(inst: Instance):
    """The answer re-derived from the question text alone."""
    q = inst.question
    lines = q.splitlines()
    kind = inst.metadata["dataset_type"]
    if kind == "arithmetic":
        root = re.search(r"What is the value of ([a-z]{3})\?", q)[1]
        return _arith_value(_arith_defs(lines), root)
    if kind == "linear_equation":
        defs = _arith_defs(lines)
        eqs = [re.match(r"^(.+?) \* x ([+-]) (.+?) \* y = (.+)$", line) for line in lines]
        eqs = [m for m in eqs if m]
        assert len(eqs) == 2
        rows = []
        for m in eqs:
            a = _coef(m[1], defs)
            b = _coef(m[3], defs) * (1 if m[2] == "+" else -1)
            rows.append((a, b, _coef(m[4], defs)))
        (a1, b1, c1), (a2, b2, c2) = rows
        x, y = np.linalg.solve(np.array([[a1, b1], [a2, b2]]), np.array([c1, c2]))
        assert abs(a1 * x + b1 * y - c1) <= 1e-6 * max(1, abs(c1), abs(a1 * x))
        return float(x)
    if kind == "bool_logic":
        root = re.search(r"What is the value of ([a-z]{3}):", q)[1]
        return str(_bool_value(lines, root))
    facts, rules = _logic_defs(lines)
    if kind == "deductive_logic":
        root = re.search(r"is ([a-z]{3}) true, false, or N/A", q)[1]
        v = _logic_value(facts, rules, root)
        return "N/A" if v is None else str(v)
    target = re.search(r"\n([a-z]{3}) is either true or false, but its value is not stated\.", q)[1]
    root, obs = re.search(r"It is observed that ([a-z]{3}) is (true|false),", q).groups()
    assert target not in facts and target not in rules and root in rules
    ok = [t for t in (True, False) if _logic_value({**facts, target: t}, rules, root) == (obs == "true")]
    assert ok, "the observation contradicts every value of the target"
    return str(ok[0]) if len(ok) == 1 else "N/A"


# ------------------------------------------------------------------------------------------------------------------
# space, registry, validation
# ------------------------------------------------------------------------------------------------------------------


def test_space_has_4440_templates():
    sp = GEN.space()
    assert [p.name for p in sp.params] == ["dataset_type", "depth", "children", "extra_links", "add_rand_desc", "order"]
    assert sp.size() == 4440
    configs = sp.enumerate()
    keys = {tuple(sorted(c.items())) for c in configs}
    assert len(configs) == len(keys) == 4440
    assert not any(c["depth"] >= 8 and c["children"] >= 3 for c in configs)
    assert not any(c["depth"] == 7 and c["children"] == 4 for c in configs)
    assert not any(c["depth"] >= 8 and c["extra_links"] >= 2 for c in configs)
    for c in configs[::37]:
        assert GEN.validate(c) == c


def test_registered_and_factory():
    assert "dyval" in generator_names()
    g = get_generator("dyval")
    assert isinstance(g, DyValGenerator) and g.name == "dyval"
    assert get_generator("dyval", decimals=3).decimals == 3
    with pytest.raises(AssayInputError):
        get_generator("dyval", bogus=1)
    with pytest.raises(AssayInputError, match="decimals"):
        DyValGenerator(decimals=-1)
    with pytest.raises(AssayInputError):
        get_generator("dyval", tolerance=0.01)  # the old relative tolerance is gone
    with pytest.raises(AssayInputError, match="max_retries"):
        DyValGenerator(max_retries=0)


@pytest.mark.parametrize(
    "bad, param",
    [
        ({"depth": 11}, "depth"),
        ({"depth": 1}, "depth"),
        ({"depth": 3.0}, "depth"),
        ({"depth": True}, "depth"),
        ({"children": 5}, "children"),
        ({"extra_links": -1}, "extra_links"),
        ({"add_rand_desc": 4}, "add_rand_desc"),
        ({"dataset_type": "geometry"}, "dataset_type"),
        ({"order": "bottom_up"}, "order"),
        ({"depth": 8, "children": 3}, "children"),
        ({"depth": 7, "children": 4}, "children"),
        ({"depth": 9, "children": 2, "extra_links": 2}, "extra_links"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_bad_configs_raise_naming_the_parameter(bad, param):
    c = {**cfg(), **bad}
    with pytest.raises(AssayInputError, match=param):
        GEN.generate(c, np.random.default_rng(0))
    with pytest.raises(AssayInputError, match=param):
        GEN.complexity(c)


def test_other_bad_inputs():
    c = cfg()
    del c["order"]
    with pytest.raises(AssayInputError, match="order"):
        GEN.validate(c)
    with pytest.raises(AssayInputError):
        GEN.validate(["arithmetic", 3])
    with pytest.raises(AssayInputError, match="rng"):
        GEN.generate(cfg(), 0)
    with pytest.raises(AssayInputError):
        GEN.score(42, gen())
    # numpy integers are accepted and returned as plain ints
    c = GEN.validate({**cfg(), "depth": np.int64(4)})
    assert c["depth"] == 4 and type(c["depth"]) is int


def test_retry_exhaustion_names_the_config(monkeypatch):
    def always_retry(*a, **k):
        raise dyval._Retry

    monkeypatch.setattr(dyval, "_build", always_retry)
    with pytest.raises(AssayInputError, match="linear_equation"):
        DyValGenerator(max_retries=3).generate(cfg("linear_equation"), np.random.default_rng(0))


def test_complexity():
    assert GEN.complexity(cfg(depth=3, children=2)) == pytest.approx(3.0)
    assert GEN.complexity(cfg(depth=6, children=4)) == pytest.approx(12.0)
    assert GEN.complexity(cfg(depth=5, children=3)) == pytest.approx(math.log2(3**5))


# ------------------------------------------------------------------------------------------------------------------
# determinism
# ------------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", DATASET_TYPES)
def test_deterministic_given_rng_and_global_state_untouched(kind):
    c = cfg(kind, depth=4, children=3, extra_links=2, add_rand_desc=2, order="random")
    py_state, np_state = random.getstate(), np.random.get_state()
    a = GEN.generate(c, np.random.default_rng(123))
    b = GEN.generate(c, np.random.default_rng(123))
    assert random.getstate() == py_state
    assert all(np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y
               for x, y in zip(np.random.get_state(), np_state))
    assert a.question == b.question and a.reference == b.reference and a.metadata == b.metadata
    questions = {GEN.generate(c, np.random.default_rng(s)).question for s in range(15)}
    assert len(questions) == 15
    json.dumps(a.to_dict())  # metadata is plain JSON


# ------------------------------------------------------------------------------------------------------------------
# references
# ------------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", DATASET_TYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_reference_matches_independent_recomputation(kind, shape):
    depth, children, extra = shape
    for seed in range(3):
        inst = gen(seed, dataset_type=kind, depth=depth, children=children, extra_links=extra,
                   add_rand_desc=2, order="random")
        want = expected_answer(inst)
        ref = inst.reference
        md = inst.metadata
        assert md["config"]["dataset_type"] == kind and md["n_distractors"] == 2
        if md["answer_type"] == "number":
            assert kind in ("arithmetic", "linear_equation")
            assert isinstance(ref, float) and math.isfinite(ref) and abs(ref) <= 1e6
            assert ref == pytest.approx(want, rel=1e-7, abs=1e-7)
            assert GEN.score(f"\\boxed{{{ref}}}", inst) == 1.0
            assert GEN.score(f"so x = \\boxed{{{round(ref, 2)}}}", inst) == 1.0
            assert GEN.score(f"\\boxed{{{ref + 1 + abs(ref)}}}", inst) == 0.0
            assert inst.question.endswith("Give your final answer inside \\boxed{}, for example \\boxed{42}.")
        else:
            labels = ("True", "False") if kind == "bool_logic" else ("True", "False", "N/A")
            assert ref == want and ref in labels
            assert GEN.score(f"\\boxed{{{ref}}}", inst) == 1.0
            wrong = next(lab for lab in labels if lab != ref)
            assert GEN.score(f"\\boxed{{{wrong}}}", inst) == 0.0
            assert "\\boxed{True}" in inst.question.splitlines()[-1]
        assert GEN.score("I am not sure.", inst) is None
        assert GEN.score(None, inst) is None


def test_arithmetic_sentences_and_ops():
    seen = Counter()
    for s in range(40):
        inst = gen(s, depth=4, children=3, extra_links=1)
        for line in description_lines(inst):
            for word in ("the sum of", "the product of", " minus ", " divided by ", "the square root of",
                         "the square of"):
                seen[word] += word in line
    assert all(seen[w] > 0 for w in seen), seen
    inst = gen(0)
    leaf_values = [int(m[1]) for m in re.finditer(r"The value of [a-z]{3} is (-?\d+)\.", inst.question)]
    assert leaf_values and all(1 <= v <= 10 for v in leaf_values)


def test_linear_equation_metadata():
    inst = gen(3, dataset_type="linear_equation", depth=3, children=2)
    md = inst.metadata
    assert len(md["roots"]) == 2 and len(md["coefficients"]) == 6
    assert sorted(c for c in md["coefficients"] if isinstance(c, str)) == sorted(md["roots"])
    assert all(c != 0 and abs(c) <= 10 for c in md["coefficients"] if not isinstance(c, str))
    lines = inst.question.splitlines()
    assert lines.index(next(x for x in lines if x.startswith("Consider the following system"))) > md["n_descriptions"]


@pytest.mark.parametrize("kind", ["bool_logic", "deductive_logic", "abductive_logic"])
def test_labels_not_degenerate(kind):
    rng = np.random.default_rng(7)
    configs = [c for c in GEN.space().enumerate() if c["dataset_type"] == kind]
    labels = Counter()
    for i in rng.integers(len(configs), size=200):
        labels[GEN.generate(configs[i], rng).reference] += 1
    wanted = {"True", "False"} if kind == "bool_logic" else {"True", "False", "N/A"}
    assert set(labels) == wanted
    assert min(labels.values()) >= 200 / len(wanted) / 3, labels  # no label below a third of its fair share


# ------------------------------------------------------------------------------------------------------------------
# graph shape
# ------------------------------------------------------------------------------------------------------------------


def _mean_nodes(**kw):
    return np.mean([gen(s, extra_links=0, **kw).metadata["n_nodes"] for s in range(30)])


def test_node_count_grows_with_depth_and_children():
    by_depth = [_mean_nodes(depth=d, children=2) for d in (2, 4, 6, 8, 10)]
    assert all(a < b for a, b in zip(by_depth, by_depth[1:])), by_depth
    by_children = [_mean_nodes(depth=4, children=k) for k in (2, 3, 4)]
    assert all(a < b for a, b in zip(by_children, by_children[1:])), by_children
    for d, k in [(2, 2), (6, 4), (10, 2), (7, 3)]:
        for s in range(5):
            n = gen(s, depth=d, children=k).metadata["n_nodes"]
            assert d + 1 <= n <= (k ** (d + 1) - 1) // (k - 1)


def _check_acyclic_from_edges(names, edges):
    indeg = {n: 0 for n in names}
    out = {n: [] for n in names}
    for p, c in edges:
        out[p].append(c)
        indeg[c] += 1
    queue = [n for n in names if indeg[n] == 0]
    seen = 0
    while queue:
        n = queue.pop()
        seen += 1
        for c in out[n]:
            indeg[c] -= 1
            if indeg[c] == 0:
                queue.append(c)
    return seen == len(names)


@pytest.mark.parametrize("kind", DATASET_TYPES)
def test_extra_links_add_edges_and_keep_the_graph_acyclic(kind):
    trees = 2 if kind == "linear_equation" else 1
    added = 0
    for s in range(8):
        for extra in (0, 3):
            c = cfg(kind, depth=4, children=3, extra_links=extra)
            inst, dag = GEN.generate_with_dag(c, np.random.default_rng(s))
            md = inst.metadata
            assert md["n_nodes"] == dag.n_nodes == len(dag.names) == len(set(dag.names))
            assert all(NAME.match(n) for n in dag.names) and not set(dag.names) & {"the", "and", "not", "are", "for"}
            edges = dag.edges()
            assert md["n_edges"] == len(edges) == len(set(edges))
            assert md["n_edges"] == md["n_nodes"] - trees + md["n_extra_links"]
            assert dag.is_acyclic() and _check_acyclic_from_edges(dag.names, edges)
            assert all(p != c for p, c in edges)
            for u, kids in enumerate(dag.children):  # unary nodes keep their single child
                if dag.ops[u] in ("sqrt", "square", "not", "lit"):
                    assert len(kids) == 1
            if extra == 0:
                assert md["n_extra_links"] == 0
            else:
                n_internal = sum(1 for kids in dag.children if len(kids) > 1)
                assert 0 <= md["n_extra_links"] <= extra * n_internal
                added += md["n_extra_links"]
    assert added > 0


# ------------------------------------------------------------------------------------------------------------------
# description order and distractors
# ------------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", DATASET_TYPES)
def test_order_reversed_and_random(kind):
    for s in range(3):
        base = dict(dataset_type=kind, depth=3, children=3, extra_links=1, add_rand_desc=2)
        topo = description_lines(gen(s, order="topological", **base))
        rev = gen(s, order="reversed", **base)
        shuffled = description_lines(gen(s, order="random", **base))
        assert description_lines(rev) == topo[::-1]
        assert sorted(shuffled) == sorted(topo)
        assert rev.reference == gen(s, order="topological", **base).reference
    # leaves first: in topological order every DAG node is described after the nodes it mentions
    inst, dag = GEN.generate_with_dag(cfg(kind, depth=3, children=3, extra_links=2), np.random.default_rng(0))
    lines = description_lines(inst)
    where = {}
    for i, line in enumerate(lines):
        for name in dag.names:
            if re.search(rf"\b{name}\b", line):
                where.setdefault(name, i)
    for u, kids in enumerate(dag.children):
        if kids and dag.names[u] in where:
            for c in kids:
                if dag.names[c] in where:
                    assert where[dag.names[c]] <= where[dag.names[u]]


@pytest.mark.parametrize("kind", DATASET_TYPES)
def test_add_rand_desc_adds_exactly_that_many_sentences(kind):
    for s in range(3):
        base = dict(dataset_type=kind, depth=3, children=2, extra_links=1, order="topological")
        plain = gen(s, add_rand_desc=0, **base)
        lines0 = description_lines(plain)
        for k in (1, 2, 3):
            inst = gen(s, add_rand_desc=k, **base)
            lines = description_lines(inst)
            assert len(lines) == len(lines0) + k == inst.metadata["n_descriptions"]
            assert inst.metadata["n_distractors"] == k and inst.reference == plain.reference
            it = iter(lines)  # the original descriptions keep their order
            assert all(any(x == y for y in it) for x in lines0)
            extra = Counter(lines) - Counter(lines0)
            assert sum(extra.values()) == k
            assert len(inst.question.splitlines()) == len(plain.question.splitlines()) + k
            assert expected_answer(inst) == pytest.approx(expected_answer(plain))


# ------------------------------------------------------------------------------------------------------------------
# scoring
# ------------------------------------------------------------------------------------------------------------------


def _num_instance(ref):
    return Instance("q", ref, {"answer_type": "number"})


def _label_instance(ref):
    return Instance("q", ref, {"answer_type": "label"})


def test_score_numbers():
    inst = _num_instance(12.3456)
    assert GEN.score("\\boxed{12.35}", inst) == 1.0
    assert GEN.score("\\boxed{12.3456}", inst) == 1.0  # unrounded: the same at two decimals
    assert GEN.score("\\boxed{12.3}", inst) == 0.0  # 12.30 is not 12.35 (the old 1% rule accepted it)
    assert GEN.score("\\boxed{12.34}", inst) == 0.0
    assert GEN.score("\\boxed{12.6}", inst) == 0.0
    assert GEN.score("\\boxed{12.1} no wait \\boxed{12.35}", inst) == 1.0  # the last box counts
    assert GEN.score("Working...\nAnswer: 12.35", inst) == 1.0  # fallback without a box
    assert GEN.score("\\boxed{x = 12.35}", inst) == 1.0
    assert GEN.score("\\boxed{undefined}", inst) is None
    assert GEN.score("no answer at all", inst) is None
    assert GEN.score("", inst) is None
    small = _num_instance(0.004)
    assert GEN.score("\\boxed{0}", small) == 1.0 and GEN.score("\\boxed{0.02}", small) == 0.0
    neg = _num_instance(-250000.0)
    assert GEN.score("\\boxed{-250,000}", neg) == 1.0 and GEN.score("\\boxed{250000}", neg) == 0.0
    strict = DyValGenerator(decimals=4)
    assert strict.score("\\boxed{12.35}", inst) == 0.0 and strict.score("\\boxed{12.3456}", inst) == 1.0
    # the case: within 1% of 1600 is not 1600
    big = _num_instance(1600.0)
    assert GEN.score("\\boxed{1584}", big) == 0.0 and GEN.score("\\boxed{1615}", big) == 0.0
    assert GEN.score("\\boxed{1600}", big) == 1.0 and GEN.score("\\boxed{1,600.00}", big) == 1.0
    # a reference exactly on a tie: either correct rounding is accepted, a wrong one is not
    tie = _num_instance(2.665)  # half-up 2.67, half-even 2.66
    assert GEN.score("\\boxed{2.67}", tie) == 1.0 and GEN.score("\\boxed{2.66}", tie) == 1.0
    assert GEN.score("\\boxed{2.68}", tie) == 0.0
    assert GEN.score("\\boxed{2.68}", _num_instance(2.675)) == 1.0  # no tie between the roundings there
    assert GEN.score("\\boxed{2.67}", _num_instance(2.675)) == 0.0
    third = _num_instance(1 / 3)
    assert GEN.score("\\boxed{0.33}", third) == 1.0 and GEN.score("\\boxed{1/3}", third) == 1.0
    assert GEN.score("\\boxed{0.34}", third) == 0.0


def test_score_labels():
    na = _label_instance("N/A")
    for text in ("\\boxed{N/A}", "\\boxed{n/a}", "\\boxed{NA}", "\\boxed{unknown}", "\\boxed{\\text{N/A}}",
                 "Answer: N/A.", "\\boxed{Cannot be determined}"):
        assert GEN.score(text, na) == 1.0, text
    assert GEN.score("\\boxed{True}", na) == 0.0
    yes = _label_instance("True")
    for text in ("\\boxed{True}", "\\boxed{true}", "\\boxed{TRUE.}", "\\boxed{\\textbf{True}}", "**Answer:** True"):
        assert GEN.score(text, yes) == 1.0, text
    assert GEN.score("\\boxed{False}", yes) == 0.0
    assert GEN.score("\\boxed{N/A}", yes) == 0.0
    assert GEN.score("\\boxed{maybe}", yes) is None
    assert GEN.score("I think it holds", yes) is None


# ------------------------------------------------------------------------------------------------------------------
# speed
# ------------------------------------------------------------------------------------------------------------------


def test_generation_over_random_valid_configs_is_fast():
    sp = GEN.space()
    rng = np.random.default_rng(2024)
    configs = sp.sample(300, rng)
    t0 = time.perf_counter()
    for c in configs:
        inst = GEN.generate(c, rng)
        assert inst.question and inst.reference is not None
    total = time.perf_counter() - t0
    assert total < 15.0, f"300 instances took {total:.1f} s ({1000 * total / 300:.1f} ms each)"


def test_deep_binary_instance_is_fast():
    c = cfg("arithmetic", depth=10, children=2, extra_links=1, add_rand_desc=3, order="random")
    times = []
    for s in range(5):
        t0 = time.perf_counter()
        GEN.generate(c, np.random.default_rng(s))
        times.append(time.perf_counter() - t0)
    assert np.median(times) < 0.25, times  # typically a few ms; loose bound for slow CI machines
