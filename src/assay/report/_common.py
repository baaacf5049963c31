"""What every section shares: the SVG of a matplotlib figure, the page's CSS, budget labels and the HTML and
Markdown tables (whole-number columns printed as integers).
"""

from __future__ import annotations

import html
import io

import numpy as np
import pandas as pd


def _svg(fig) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    text = buf.getvalue()
    return text[text.find("<svg"):]


def _budget_label(b) -> str:
    from ..data import format_budget, parse_budget

    v = parse_budget(b)
    return "default" if v == 0 else format_budget(v, compact=True)


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:1300px;margin:2em auto;padding:0 1em;color:#222}
figure svg{max-width:100%;height:auto} .scroll{max-width:100%;overflow-x:auto}
h1{font-size:1.6em} h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;font-size:.85em;margin:1em 0} td,th{border:1px solid #ddd;padding:3px 7px;text-align:right}
th{background:#f4f6f8} td:first-child,th:first-child{text-align:left}
figure{margin:1em 0} figcaption{font-size:.9em;color:#444;max-width:900px}
.meta{color:#555;font-size:.9em} .warn{color:#a50f15}
"""


def integral_columns(df: pd.DataFrame) -> dict[str, bool]:
    """Columns whose finite values are all whole numbers (counts, budgets, first-crossing indices).

    They print as integers. Boolean and all-missing columns are not integral.

    Parameters
    ----------
    df : DataFrame
        The table.

    Returns
    -------
    dict of str to bool
        Column -> whether it is integral.

    Examples
    --------
    >>> import numpy as np
    >>> df = pd.DataFrame({"n": [10.0, 20.0], "acc": [0.5, 0.75], "ok": [True, False], "gap": [np.nan, np.nan]})
    >>> integral_columns(df)
    {'n': True, 'acc': False, 'ok': False, 'gap': False}
    """
    out = {}
    for c in df.columns:
        col = df[c]
        num = pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col)
        vals = col.dropna().to_numpy(dtype=float) if num else np.array([])
        vals = vals[np.isfinite(vals)]
        out[c] = bool(num and len(vals) and np.all(np.mod(vals, 1) == 0))
    return out


#: what an infinite value of a column means, in words (a table never shows ``inf``)
INFINITE_WORDS = {"items_to_resolve": "no difference seen"}


def _table_html(df: pd.DataFrame, floats: str = "{:.4f}") -> str:
    integral = integral_columns(df)

    def fmt(c, v):
        if v is None or v is pd.NA:
            return ""
        if isinstance(v, (bool, np.bool_)):
            return "yes" if v else "no"
        if isinstance(v, (int, np.integer)):
            return str(int(v))
        if isinstance(v, (float, np.floating)):
            if np.isnan(v):
                return ""
            if np.isinf(v):
                return html.escape(INFINITE_WORDS.get(c, "inf" if v > 0 else "-inf"))
            if integral[c] and np.isfinite(v):
                return str(int(v))
            return floats.format(v)
        return html.escape(str(v))

    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    cols = list(df.columns)
    body = "".join("<tr>" + "".join(f"<td>{fmt(c, v)}</td>" for c, v in zip(cols, row)) + "</tr>"
                   for row in df.itertuples(index=False))
    # a wide table scrolls inside the page instead of running past it
    return f"<div class='scroll'><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"


def _md_table(df: pd.DataFrame) -> str:
    """Integers (and whole-number float columns such as counts) as integers, budgets as 1.5M, floats with 4
    decimals, missing values blank, pipes escaped."""
    from ..data import format_budget, parse_budget

    df = df.drop(columns=[c for c in ("key", "arm") if c in df.columns])
    integral = integral_columns(df)

    def fmt(c, v):
        if v is None or v is pd.NA or (isinstance(v, (float, np.floating)) and np.isnan(v)):
            return ""
        if c == "budget":
            try:
                b = parse_budget(v)
                return "0 (default)" if b == 0 else format_budget(b, compact=True)
            except Exception:  # a label that is not a budget: shown as given
                return str(v).replace("|", "\\|")
        if isinstance(v, (bool, np.bool_)):
            return "yes" if v else "no"
        if isinstance(v, (float, np.floating)) and np.isinf(v):
            return INFINITE_WORDS.get(c, "inf" if v > 0 else "-inf")
        if isinstance(v, (int, np.integer)) or (integral[c] and isinstance(v, (float, np.floating))):
            return str(int(v))
        if isinstance(v, (float, np.floating)):
            return f"{v:.4f}"
        return str(v).replace("|", "\\|")

    cols = list(df.columns)
    lines = ["| " + " | ".join(str(c).replace("|", "\\|") for c in cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(fmt(c, v) for c, v in zip(cols, row)) + " |" for row in df.itertuples(index=False)]
    return "\n".join(lines)


def _open(section_id: str, title: str, heading: bool = True) -> str:
    """A method section's opening tag, with its title as an ``<h2>`` unless the page gives it one already (a campaign
    report titles each method once, above its models)."""
    import html

    return f"<section id='{section_id}'>" + (f"<h2>{html.escape(title)}</h2>" if heading else "")
