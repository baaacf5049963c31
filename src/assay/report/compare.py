"""The compare section: the models ranked with their intervals, rank intervals and tiers, and the pairwise verdicts
as a matrix."""

from __future__ import annotations

import html

import numpy as np

from ..compare.api import epochs_line
from ..compare import claims
from ..compare.claims import scope_words
from ..results import Result
from ._common import _open, _svg, _table_html

#: colours of the verdict matrix: row better, row worse, equivalent, unresolved
_COLOURS = {"better": "#2c7fb8", "worse": "#d95f0e", "equivalent": "#78c679", "unresolved": "#e0e0e0"}


def _order(result: Result):
    m = result.tables["models"]
    return m.sort_values(["tier", "estimate"], ascending=[True, False]).reset_index(drop=True)


def compare_figure(result: Result) -> str:
    """Draw the figure of a model comparison.

    Left: the models, best first, with their simultaneous intervals, tiers (shaded bands) and rank intervals.
    Right: the pairwise verdicts, row against column.

    Parameters
    ----------
    result : Result
        A result of the ``"compare"`` method (its ``"models"`` table).

    Returns
    -------
    str
        The figure as inline SVG markup (from ``<svg`` on, no XML header), ready to embed in an HTML page.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap

    m = _order(result)
    K = len(m)
    show = min(K, 40)
    m = m.head(show)
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, max(3.0, 0.32 * show + 1.2)),
                                 gridspec_kw={"width_ratios": [1.3, 1]})
    y = np.arange(show)[::-1]
    shades = ["#f7f7f7", "#ffffff"]
    for i, (yy, tier) in enumerate(zip(y, m["tier"])):
        a1.axhspan(yy - 0.5, yy + 0.5, color=shades[int(tier) % 2], zorder=0)
    a1.hlines(y, m["ci_low"], m["ci_high"], color="#2c7fb8", lw=2.5)
    a1.plot(m["estimate"], y, "k|", ms=10)
    labels = [f"{str(r.model)[:32]}  (rank {r.rank_low}{'' if r.rank_low == r.rank_high else f'-{r.rank_high}'}, "
              f"tier {r.tier})" for r in m.itertuples(index=False)]
    a1.set_yticks(y)
    a1.set_yticklabels(labels, fontsize=7)
    a1.set_xlabel("mean score (simultaneous interval)")
    a1.grid(axis="x", alpha=0.3)
    a1.set_title("models by tier, best first", fontsize=9)
    names = list(m["model"])
    idx = {n: i for i, n in enumerate(names)}
    code = np.full((show, show), 3)
    for r in result.tables["pairs"].itertuples(index=False):
        if r.model_a not in idx or r.model_b not in idx:
            continue
        i, j = idx[r.model_a], idx[r.model_b]
        v = {"a better": (0, 1), "b better": (1, 0), "equivalent": (2, 2), "equal": (2, 2)}.get(r.verdict, (3, 3))
        code[i, j], code[j, i] = v
    np.fill_diagonal(code, 3)
    cmap = ListedColormap([_COLOURS[k] for k in ("better", "worse", "equivalent", "unresolved")])
    a2.imshow(code, cmap=cmap, vmin=0, vmax=3)
    a2.set_xticks(range(show))
    a2.set_xticklabels([str(n)[:16] for n in names], rotation=90, fontsize=6)
    a2.set_yticks(range(show))
    a2.set_yticklabels([str(n)[:16] for n in names], fontsize=6)
    a2.set_title("row vs column: better (blue), worse (orange), equal or equivalent (green), unresolved (grey)",
                  fontsize=8)
    fig.tight_layout()
    return _svg(fig)


def rounds_figure(result: Result) -> str:
    """Draw the questions each model was asked, cumulated round by round, in an adaptive comparison (one line per
    model, ending at the round it left; the rounds table of :func:`assay.compare.live.query_until_resolved`).

    Parameters
    ----------
    result : Result
        A ``"compare"`` result asked adaptively (with a ``"rounds"`` table).

    Returns
    -------
    str
        The figure as inline SVG markup.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    r = result.tables["rounds"]
    m = result.tables["models"].set_index("model")
    fig, ax = plt.subplots(figsize=(8, 3.6))
    for name in _order(result)["model"]:
        g = r[r["model"] == name].sort_values("round")
        if not len(g):
            continue
        ax.step(np.r_[0, g["round"]], np.r_[0, g["questions"].cumsum()], where="post", lw=1.5,
                label=f"{str(name)[:28]} ({m.loc[name, 'left_reason']})")
    ax.set_xlabel("round")
    ax.set_ylabel("questions asked")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", frameon=False)
    ax.set_title("questions asked of each model, round by round (a line ends where the model left)", fontsize=9)
    fig.tight_layout()
    return _svg(fig)


def _compare_section(result: Result, heading: bool = True) -> str:
    p, lv, i = result.params, result.level, result.info
    m = result.tables["models"]
    pairs = result.tables["pairs"]
    counts = pairs["verdict"].value_counts().to_dict()
    parts = [
        _open("compare", "compare: which models are better, which are tied, where each ranks", heading),
        f"<p class='meta'>{len(m)} models on {result.n} questions every model answered; {html.escape(p['guarantee'])} "
        f"guarantee, delta {lv['delta']:g}" + (f", equivalence margin {p['margin']:g}" if p.get("margin") else "")
        + f"; <b>{html.escape(scope_words(i))}</b>: {counts.get('a better', 0) + counts.get('b better', 0)} of "
        f"{len(pairs)} pairs ordered, " + (f"{counts['equal']} equal, " if counts.get("equal") else "")
        + (f"{counts.get('equivalent', 0)} equivalent, " if p.get("margin") is not None else "")
        + f"{counts.get('unresolved', 0)} unresolved; seed {result.seed}.</p>",
        f"<p class='meta'>Estimand: {html.escape(str(i.get('estimand')))}.</p>",
        *([f"<p class='meta'>{html.escape(epochs_line(i.get('epochs') or {}))}.</p>"]
          if epochs_line(i.get("epochs") or {}) else []),
        *([f"<p class='meta'>Scorers: {html.escape('; '.join(f'{k}: {v}' for k, v in i['scorers'].items()))}.</p>"]
          if i.get("scorers") else []),
        *([f"<p class='meta'>Graded: {html.escape('; '.join(f'{k} with {v}' for k, v in i['graders'].items()))}.</p>"]
          if i.get("graders") else []),
        f"<figure>{compare_figure(result)}<figcaption>Left: each model's mean score with its interval; the guarantee: "
        f"{html.escape(str(lv.get('meaning')))}. A rank interval runs from 1 + the number of models certified better "
        "to the number of models less those certified worse; a tier is 1 + the longest chain of certified "
        "'better' above the model (shaded bands alternate by tier). Right: each pair's verdict. An unresolved pair is "
        "not a tie: the data cannot tell them apart at this level; a pair is equivalent only inside a margin given "
        "(--margin), and equal only when its difference is known exactly (a bank asked whole). The models table's "
        "outcomes column says how each model's answers ended.</figcaption></figure>",
        _table_html(_order(result)),
        _table_html(pairs, floats="{:.4f}"),
    ]
    rounds = result.tables.get("rounds")
    if rounds is not None and len(rounds):
        goal = (f"goal met: {i.get('goal_wanted')}" if i.get("goal_met") else
                f"goal not met ({i.get('stopped')}): {i.get('goal_wanted')}")
        rp = i.get("replay")
        parts.insert(3, f"<p class='meta'><b>{html.escape(str(goal))}</b>; {i.get('questions')} questions drawn of "
                        f"the bank's {i.get('bank_size')}"
                        + (f"; history: {html.escape(str(i['history']))}" if i.get("history") else "; no history")
                        + (f"; {html.escape(claims.replay_words(rp))}" if rp else "") + ".</p>")
        parts.append(f"<figure>{rounds_figure(result)}<figcaption>The models still in play are asked the same "
                     "questions each round; a model whose claims the goal needs are settled leaves (left_round, "
                     "left_reason in the models table). Every draw and its probability: the draws table."
                     "</figcaption></figure>")
    pop = i.get("population")
    if pop:
        parts.append(f"<p class='meta'><b>{html.escape(str(pop['said']))}</b></p>")
        for name in ("population_models", "population_pairs"):
            t = result.tables.get(name)
            if t is not None and len(t):
                parts.append(_table_html(t, floats="{:.4f}"))
    for name, caption in (("tasks", "Each task's model means"), ("task_pairs", "Each task's pairs")):
        t = result.tables.get(name)
        if t is not None and len(t):
            parts.append(f"<p class='meta'>{caption}: simultaneous over the tasks, each task's claims at error "
                         f"level {float(i.get('per_task_level', float('nan'))):.4g}.</p>")
            parts.append(_table_html(t, floats="{:.4f}"))
    for req in i.get("require", []) or []:
        ok = bool(req.get("certified"))
        parts.append(f"<p class='meta'><b>require {'certified' if ok else 'NOT certified'}:</b> "
                     f"{html.escape(str(req.get('detail')))}</p>")
    for w in result.warnings:
        parts.append(f"<p class='meta'>note: {html.escape(w)}</p>")
    parts.append("</section>")
    return "\n".join(parts)
