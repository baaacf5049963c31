"""Answer extraction: the rules that read a final answer out of a model's text, one section per answer shape.

Real small models rarely answer in the exact shape asked for. The rules below were written against the responses
of real models (``tests/fixtures/live_corpus/``: prompts and the SmolLM2-135M-Instruct answers they produced, each
with its expected parse checked by hand) and are tested on every response of that corpus.

Answer shapes and their extractors:

* **boxed** (:func:`extract_boxed`): the last ``\boxed{...}`` / ``\fbox{...}``, nested braces matched;
* **marked** (:func:`extract_answer`): the last ``Answer: X`` / ``**Final answer:** X`` line;
* **auto** (:func:`extract_auto`, the default of ``exact`` and ``numeric``): boxed, else marked, else a final
  answer stated in a sentence (``The answer is 42.``, ``The value of zyc is True.``), else a one-line response;
* **label** (:func:`extract_label`): one of a closed set of words (True / False / N/A, yes / no, a verdict) stated
  as the answer, after ``<think>`` blocks are dropped;
* **number** (:func:`parse_number`): the number an extracted answer states (``1,000``, ``3/4``, ``\frac{3}{4}``,
  ``50%``, ``42 meters``, ``$1,200.50``);
* **choice** (:func:`extract_choice`): a multiple-choice letter in its usual shapes (``C``, ``(C)``, ``C)``,
  ``Answer: C``, ``the correct option is C``), ``None`` when two letters compete;
* **math** (:func:`extract_math`): the answer a maths response commits to, LaTeX kept (``\boxed{}``, Minerva's
  "The final answer is", markers, the concluding statement), for the ``math`` scorer.

The rules live by answer shape, each beside its examples: :mod:`.markers` (the shared markers: boxed, ``Answer:``,
reasoning blocks, an answer stated in a sentence, ``auto``), :mod:`.values` (normalisation, numbers and number
words as values), :mod:`.numbers` (a number stated as the final answer of a worked response), :mod:`.choices`
(multiple-choice letters), :mod:`.labels` (a closed set of words) and :mod:`.maths` (maths answers in LaTeX).

Everything first drops reasoning blocks (``<think>...</think>``, ``<reasoning>``), which hold drafts, not
answers: :func:`strip_reasoning`. :func:`normalize` is the canonical string form used by ``exact``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...errors import AssayInputError
from .choices import extract_choice, parse_options
from .labels import LABEL_SYNONYMS, extract_label
from .maths import extract_math
from .markers import extract_answer, extract_auto, extract_boxed, extract_statement, strip_reasoning
from .numbers import extract_number
from .values import normalize, parse_number, word_number

# the helpers assay.models.scoring builds its scorers from
from .choices import _choice_letters, _choice_with_reason, _letter_in  # noqa: F401
from .labels import _label_of, _label_table  # noqa: F401
from .markers import _check_text  # noqa: F401

__all__ = ["extract_boxed", "extract_answer", "extract_choice", "extract_auto", "extract_label", "normalize",
           "parse_number", "strip_reasoning", "resolve_extract", "EXTRACTORS", "parse_options",
           "extract_statement", "extract_number", "word_number", "extract_math"]


def _extract_text(text: str | None) -> str | None:
    if text is None or not text.strip():
        return None
    return text.strip()


EXTRACTORS: dict[str, Callable[[str | None], str | None]] = {
    "auto": extract_auto,
    "number": extract_number,
    "math": extract_math,
    "label": extract_label,
    "boxed": extract_boxed,
    "answer": extract_answer,
    "text": _extract_text,
}


def resolve_extract(extract: Any) -> Callable[[str | None], str | None]:
    """The extractor function an ``extract=`` argument names.

    Parameters
    ----------
    extract : str, callable or None
        A name in :data:`EXTRACTORS` (``"auto"``, ``"number"``, ``"math"``, ``"label"``, ``"boxed"``, ``"answer"``,
        ``"text"``), None (the whole text, stripped; ``None`` when blank) or a callable text -> str | None, returned
        as it is.

    Returns
    -------
    callable
        A function text -> str | None.

    Raises
    ------
    AssayInputError
        If ``extract`` is an unknown name or neither a name, None nor a callable.

    Examples
    --------
    >>> resolve_extract("boxed") is extract_boxed
    True
    >>> resolve_extract(None)("  Paris ")
    'Paris'
    """
    if extract is None:
        return _extract_text
    if isinstance(extract, str):
        if extract in EXTRACTORS:
            return EXTRACTORS[extract]
        raise AssayInputError(
            f"unknown extractor {extract!r}; accepted: {', '.join(map(repr, EXTRACTORS))}, None "
            "(the whole text) or a callable text -> str | None"
        )
    if callable(extract):
        return extract
    raise AssayInputError(f"extract must be a name, None or a callable; got {extract!r}")


def _name(fn: Any) -> str:
    return getattr(fn, "__name__", None) or type(fn).__name__
