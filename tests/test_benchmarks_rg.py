"""reasoning-gym adapter: config mapping, determinism, reasoning-gym's own scorer (correct only at 1.0), Grid Reasoning."""

import numpy as np
import pytest

pytest.importorskip("reasoning_gym")

from assay.benchmarks import get_generator  # noqa: E402
from assay.errors import AssayInputError  # noqa: E402


def test_grid_generator_space_and_oracle_scores():
    gen = get_generator("grid")
    space = gen.space()
    rng = np.random.default_rng(0)
    for cfg in space.sample(12, rng):
        inst = gen.generate(cfg, np.random.default_rng(1))
        m = inst.metadata["entry"]["metadata"]
        grid = m["matrix"] if cfg["task"] == "shortest_path" else m["grid"]
        assert len(grid) == cfg["rows"] and len(grid[0]) == cfg["cols"]
        assert gen.score(f"so the answer is \\boxed{{{inst.reference}}}", inst) == 1.0
        assert gen.score("I cannot tell", inst) is None
        assert gen.score("\\boxed{zzz}", inst) == 0.0
        assert "\\boxed{}" in inst.question
        assert 4.6 < gen.complexity(cfg) < 9.3


def test_determinism_and_pinned_ranges():
    gen = get_generator("reasoning_gym:shortest_path")
    cfg = {"rows": 9, "cols": 11, "p_blocked": 0.2}
    a = gen.generate(cfg, np.random.default_rng(5))
    b = gen.generate(cfg, np.random.default_rng(5))
    c = gen.generate(cfg, np.random.default_rng(6))
    assert a.question == b.question and a.reference == b.reference and a.question != c.question
    grid = a.metadata["entry"]["metadata"]["matrix"]
    assert len(grid) == 9 and len(grid[0]) == 11


def test_partial_credit_is_not_correct():
    gen = get_generator("reasoning_gym:largest_island")
    inst = gen.generate({"rows": 8, "cols": 8, "num_islands": 3, "island_size": 6}, np.random.default_rng(2))
    ref = str(inst.reference)
    assert gen.score(f"\\boxed{{{ref}}}", inst) == 1.0
    # the generic substring rule would give partial credit to "12 cells"; QuickScope counts only score 1.0
    assert gen.score(f"\\boxed{{{ref} cells}}", inst) == 0.0


def test_bad_task_and_fields():
    with pytest.raises(AssayInputError, match="no task"):
        get_generator("reasoning_gym:no_such_task")
    with pytest.raises(AssayInputError, match="name the reasoning-gym task"):
        get_generator("reasoning_gym")
    gen = get_generator("reasoning_gym:shortest_path")
    with pytest.raises(AssayInputError, match="no config field"):
        gen.generate({"colour": 3}, np.random.default_rng(0))
    with pytest.raises(AssayInputError, match="rejected"):
        gen.generate({"rows": 0, "cols": 5}, np.random.default_rng(0))


def _offered():
    from assay.benchmarks.reasoning_gym import offered_tasks

    return offered_tasks()


@pytest.mark.slow
@pytest.mark.parametrize("task", _offered())
def test_every_offered_task_scores_its_oracle_and_only_it(task):
    """10 generated instances per task (up to 0.15 s each to generate: knight_swap, futoshiki): the oracle answer,
    boxed as the instruction asks, scores 1.0; a junk answer and the oracle of another instance (when different)
    never do. The scorer sees the answer unchanged.
    n_queens has many valid solutions (another instance's board may be one), so there only the junk answer is checked."""
    gen = get_generator(f"reasoning_gym:{task}")
    rng = np.random.default_rng(0)
    insts = [gen.generate({}, rng) for _ in range(10)]
    for i, inst in enumerate(insts):
        ref = str(inst.reference)
        assert gen.score(f"Let me work it out.\n\\boxed{{{ref}}}", inst) == 1.0, (task, ref[:80])
        assert gen.score("\\boxed{zzqx wrong}", inst) in (0.0,)
        other = str(insts[(i + 1) % len(insts)].reference)
        if other != ref and task != "n_queens":
            assert gen.score(f"\\boxed{{{other}}}", inst) == 0.0, (task, ref[:60], other[:60])


@pytest.mark.parametrize("task", ["composite", "boxnet", "game_of_life_halting", "puzzle24"])
def test_excluded_tasks_are_refused_with_the_reason(task):
    from assay.benchmarks.reasoning_gym import EXCLUDED

    with pytest.raises(AssayInputError, match="not offered"):
        get_generator(f"reasoning_gym:{task}")
    assert task in EXCLUDED and len(EXCLUDED[task]) > 20


def test_answers_reach_the_scorer_unchanged():
    """Case and commas matter to some scorers: word_sorting wants the words as given, comma-separated."""
    from assay.benchmarks.reasoning_gym import _extract

    assert _extract("so \\boxed{Alpha, beta, Gamma}") == "Alpha, beta, Gamma"
    assert _extract('\\boxed{{"s": "}[}}}{(]"}}') == '{"s": "}[}}}{(]"}'  # unbalanced braces inside a string
    assert _extract("\\boxed{}") == ""
    assert _extract("Answer: Yes, All") == "Yes, All"
    assert _extract("no answer here") is None


@pytest.mark.slow
@pytest.mark.parametrize("task", sorted(__import__("assay.benchmarks.reasoning_gym", fromlist=["x"]).SEED_FREE_INIT))
def test_a_dataset_built_once_gives_what_one_built_per_instance_gives(task):
    """The tasks whose data is read once per config (SEED_FREE_INIT): each instance equals the first item of a
    dataset built with that instance's seed (question, answer and metadata), over several configs' worth of draws."""
    import reasoning_gym as rg

    gen = get_generator(f"reasoning_gym:{task}")
    rng = np.random.default_rng(7)
    insts = [gen.generate({}, rng) for _ in range(3)]
    assert len(gen._datasets) == 1 and len({i.metadata["seed"] for i in insts}) == 3  # built once, three seeds
    for inst in insts:
        fresh = rg.create_dataset(task, size=1, seed=inst.metadata["seed"])[0]
        assert inst.metadata["entry"] == fresh
        assert inst.reference == fresh["answer"]
