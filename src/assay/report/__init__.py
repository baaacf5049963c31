"""Self-contained HTML (inline SVG, no network) and Markdown reports of assay results.

Each method contributes a section; a section has plots with plain-word captions that say what the
guarantee is, and the result's tables.

Where things are:

- :mod:`assay.report._common`: what every section shares (a figure as SVG, the page's CSS, budget labels, the HTML
  and Markdown tables, ``integral_columns``).
- :mod:`assay.report.siren`, :mod:`~assay.report.autoeval`, :mod:`~assay.report.psdme`, :mod:`~assay.report.faq`
  (an FAQ result and the FAQ protocol) and :mod:`~assay.report.quickscope`: each method's figure(s) and its HTML
  section.
- this module: the registry of sections by result kind (``Result.method``), :func:`render_html`,
  :func:`load_results` and :func:`render_markdown` with its section titles. A new section is a module with a
  function ``Result -> str`` (one ``<section>``), registered in ``_SECTIONS`` (and titled in ``_MD_TITLES``).
"""

from __future__ import annotations

import html
from typing import Iterable

from ..results import Result
from ._common import _CSS, _md_table, _table_html
from .autoeval import _autoeval_section
from .compare import _compare_section
from .faq import _faq_protocol_section, _faq_section
from .psdme import _psdme_section
from .quickscope import _quickscope_section
from .siren import _siren_section

# importable from assay.report as before the split (assay.cli.study uses integral_columns)
from ._common import integral_columns  # noqa: F401
from .autoeval import autoeval_figure  # noqa: F401
from .compare import compare_figure  # noqa: F401
from .faq import faq_figure, faq_protocol_figure  # noqa: F401
from .psdme import psdme_figure  # noqa: F401
from .quickscope import quickscope_figure  # noqa: F401
from .siren import siren_figure  # noqa: F401

__all__ = ["render_html", "render_markdown", "load_results", "siren_figure", "faq_figure", "faq_protocol_figure", "quickscope_figure"]


_SECTIONS = {"siren": _siren_section, "autoeval": _autoeval_section, "psdme": _psdme_section, "faq": _faq_section,
             "faq-protocol": _faq_protocol_section, "quickscope": _quickscope_section, "compare": _compare_section}


def render_html(results: Iterable[Result], title: str = "assay report") -> str:
    """One self-contained HTML page (inline SVG, inline CSS, no scripts, no network).

    Parameters
    ----------
    results : iterable of Result
        The results, one section each (a method without its own section gets its main table).
    title : str, optional
        The page title and heading (default ``"assay report"``).

    Returns
    -------
    str
        The HTML page.
    """
    body = []
    for r in results:
        section = _SECTIONS.get(r.method)
        if section is None:
            text = f"<section><h2>{html.escape(r.method)}</h2>{_table_html(r.table)}</section>"
        else:
            text = section(r)
        source = r.info.get("source_file")
        if source:  # several results of one method are told apart by the file each came from
            text = text.replace("</h2>", f" <small>&middot; {html.escape(str(source))}</small></h2>", 1)
        body.append(text)
    from .._version import __version__

    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>"
        f"<h1>{html.escape(title)}</h1><p class='meta'>assay {__version__}</p>"
        + "\n".join(body) + "</body></html>"
    )


def load_results(obj) -> list[Result]:
    """Results from parsed JSON: one result (a dict with ``method``), a list of them, or a mapping name -> result.

    The mapping form is ``assay demo``'s results.json. Importing the method modules registers their result classes.

    Parameters
    ----------
    obj : dict or list
        The parsed JSON.

    Returns
    -------
    list of Result
        The results.

    Raises
    ------
    AssayInputError
        If ``obj`` holds no result or an item is not a dict with a ``method`` key.
    """
    from .. import autoeval, compare, psdme, siren  # noqa: F401
    from .. import faq, quickscope, studies  # noqa: F401
    from ..errors import AssayInputError

    if isinstance(obj, dict) and "method" in obj:
        items = [obj]
    elif isinstance(obj, dict):
        items = list(obj.values())
    elif isinstance(obj, list):
        items = obj
    else:
        items = []
    bad = [i for i in items if not isinstance(i, dict) or "method" not in i]
    if not items or bad:
        raise AssayInputError("not an assay result: expected the JSON written by --json / --out (an object with a "
                              "'method' key), a list of them, or assay demo's results.json")
    return [Result.from_dict(i) for i in items]


_MD_TITLES = {"siren": "SIREN: selection-aware scores of tune-then-deploy procedures",
              "autoeval": "R-AutoEval+: risk certificates from human and judge labels",
              "psdme": "PS-DME: KPI bands for pre-selected configurations",
              "faq": "FAQ: accuracy from actively chosen questions",
              "faq-protocol": "FAQ protocol: coverage and efficiency on held-out models",
              "quickscope": "QuickScope: certified weak regions",
              "compare": "compare: which models are better, which are tied, where each ranks",
              "study": "Simulation study"}


#: further tables a Markdown section keeps besides the main one
_MD_EXTRA = {"siren": ("contrasts",), "psdme": ("best",), "quickscope": ("certified",),
             "compare": ("pairs", "tasks", "task_pairs", "population_models", "population_pairs")}


def render_markdown(results: Iterable[Result], heading: bool = True) -> str:
    """A Markdown summary for pull requests.

    Per result: its level, seed, sample size, the guarantee in one sentence, its warnings, the main table and the
    tables a reader needs beside it (SIREN's contrasts).
    ``heading=False``: without each result's title (a campaign report titles each method once, above its models),
    its further tables one level down.

    Parameters
    ----------
    results : iterable of Result
        The results.
    heading : bool, optional
        Whether each result gets its title (default True).

    Returns
    -------
    str
        The Markdown text.
    """
    out = []
    sub = "###" if heading else "#####"
    for r in results:
        lv = r.level
        if heading:
            source = r.info.get("source_file")
            out.append(f"## {_MD_TITLES.get(r.method, r.method)}" + (f" · {source}" if source else "") + "\n")
        facts = []
        for key in ("alpha", "delta"):
            if key in lv:
                facts.append(f"{key} = {float(lv[key]):g} (confidence {1 - float(lv[key]):.0%})")
        facts.append(f"seed = {r.seed}" + (" (a numpy Generator: not repeatable from this report)"
                                            if r.seed is None and r.info.get("seed_source") == "generator" else ""))
        facts.append(f"n = {r.n}" + (f" ({r.n_meaning})" if r.n_meaning else ""))
        facts.append(f"assay {r.version}")
        out.append("- " + "; ".join(facts))
        if lv.get("meaning"):
            out.append(f"- guarantee: {lv['meaning']}")
        if (r.info.get("live") or {}).get("headline"):  # asked live: how the answers ended
            out.append(f"- answers: {r.info['live']['headline']}")
        if r.method == "compare":  # what the claims are about, and the other reading of the same answers
            from ..compare.claims import scope_words

            out.append(f"- the claims are {scope_words(r.info)}")
            if (r.info.get("population") or {}).get("said"):
                out.append(f"- {r.info['population']['said']}")
        for w in r.warnings:
            out.append(f"- **warning:** {w}")
        for req in r.info.get("require", []) or []:  # the gates a run was asked to pass (compare --require)
            out.append(f"- **require {'certified' if req.get('certified') else 'NOT certified'}:** {req.get('detail')}")
        out.append("")
        out.append(_md_table(r.table))
        for name in _MD_EXTRA.get(r.method, ()):
            t = r.tables.get(name)
            if t is not None and len(t):
                out += ["", f"{sub} {name}", "", _md_table(t)]
        out.append("")
    return "\n".join(out)
