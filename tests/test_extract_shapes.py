"""The reader split by answer shape (issue 48): ``assay.models.extract`` is a package of one module per shape
(markers, values, numbers, choices, labels); every extractor reads every response of every corpus in
``tests/fixtures/live_corpus`` exactly as the single module it was split from did.

``extract_snapshot.json`` holds, per corpus file, a short hash of what 14 extractor calls return on each response
(written from the single module at the split; regenerate with ``ASSAY_WRITE_EXTRACT_SNAPSHOT=1`` only when a rule is
meant to change, and say so in the commit). The check is one case per corpus file (with its ``_raw`` twin), shared by
the workers."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

import assay.models.extract as e

CORPUS = Path(__file__).parent / "fixtures" / "live_corpus"
SNAPSHOT = CORPUS / "extract_snapshot.json"


def _outputs(text, prompt, cut: bool) -> str:
    def safe(f, *a, **k):
        try:
            return repr(f(*a, **k))
        except Exception as x:  # noqa: BLE001 - an error is an output too
            return "ERR " + type(x).__name__

    try:  # read once: its result is one output and the argument of another (parse_number)
        auto, auto_error = e.extract_auto(text), None
    except Exception as x:  # noqa: BLE001
        auto, auto_error = None, x
    if text and auto_error is not None:
        raise auto_error  # as the output list below raised when it called extract_auto(text) for parse_number
    options = e.parse_options(prompt) if isinstance(prompt, str) else None
    out = [safe(e.strip_reasoning, text), safe(e.extract_boxed, text), safe(e.extract_answer, text),
           safe(e.extract_statement, text),
           repr(auto) if auto_error is None else "ERR " + type(auto_error).__name__,
           safe(e.extract_number, text, cut_off=cut, question=prompt), safe(e.extract_number, text),
           safe(e.extract_label, text), safe(e.extract_choice, text), safe(e.parse_options, prompt),
           safe(e.extract_choice, text, options=options), safe(e.normalize, text or ""),
           safe(e.parse_number, auto if text else None), safe(e.word_number, text or "")]
    return hashlib.sha256("\x1f".join(out).encode()).hexdigest()[:8]


def _read(names) -> dict[str, list[str]]:
    """The 14 outputs' hash for every response of the corpus files ``names``, each distinct response (its text, its
    prompt and whether it was cut off: all that the extractors are given) read once: a corpus file and its ``_raw``
    twin hold the same responses (3,844 distinct ones among the snapshot's 6,688)."""
    seen: dict[str, str] = {}

    def one(line: str) -> str:
        rec = json.loads(line)
        args = (rec.get("response"), rec.get("prompt"), rec.get("finish_reason") == "length")
        key = json.dumps(args, sort_keys=True)
        if key not in seen:
            seen[key] = _outputs(*args)
        return seen[key]

    return {name: [one(line) for line in (CORPUS / name).read_text().splitlines() if line.strip()] for name in names}


def _all() -> dict[str, list[str]]:
    return _read(sorted(f.name for f in CORPUS.glob("*.jsonl")))


def _groups() -> dict[str, list[str]]:
    """The snapshot's corpus files (the corpora of the split: files added since, e.g. the maths answers, are not in
    it), a file with its ``_raw`` twin (the same responses, read once): one test case per group, so that the workers
    share them."""
    groups: dict[str, list[str]] = {}
    for name in sorted(json.loads(SNAPSHOT.read_text())):
        groups.setdefault(name.replace("_raw", ""), []).append(name)
    return groups


def test_the_snapshot_covers_every_corpus_file_of_the_split():
    if os.environ.get("ASSAY_WRITE_EXTRACT_SNAPSHOT") == "1":
        SNAPSHOT.write_text(json.dumps(_all(), sort_keys=True, separators=(",", ":")) + "\n")
    want = json.loads(SNAPSHOT.read_text())
    missing = sorted(name for name in want if not (CORPUS / name).exists())
    assert not missing, f"a corpus file of the split is gone: regenerate the snapshot ({missing})"
    assert sum(len(v) for v in want.values()) >= 6688
    assert sorted(n for names in _groups().values() for n in names) == sorted(want)


@pytest.mark.parametrize("group", list(_groups()))
def test_every_extractor_reads_every_corpus_response_as_before_the_split(group):
    want = json.loads(SNAPSHOT.read_text())
    names = _groups()[group]
    now = _read(names)
    changed = []
    for name in names:
        assert len(now[name]) == len(want[name]), f"{name}: {len(now[name])} responses, {len(want[name])} in the " \
            "snapshot"
        changed += [f"{name}:{i}" for i, (a, b) in enumerate(zip(want[name], now[name])) if a != b]
    assert not changed, f"{len(changed)} responses read differently: {changed[:10]}"


def test_each_shape_lives_in_its_own_module():
    assert e.extract_number.__module__ == "assay.models.extract.numbers"
    assert e.extract_choice.__module__ == "assay.models.extract.choices"
    assert e.extract_label.__module__ == "assay.models.extract.labels"
    assert e.parse_number.__module__ == "assay.models.extract.values"
    assert e.extract_boxed.__module__ == "assay.models.extract.markers"


def test_the_reader_does_not_depend_on_the_threads_decimal_precision():
    # reasoning-gym's decimal_arithmetic lowers the global precision when it generates a question; CI ran this
    # reader after it once and read 149.69205080707070 rounded
    import decimal

    want = [e.normalize("149.69205080707070"), e.normalize("1,234,567.000"), e.parse_number("2.718281828459045")]
    assert want == ["149.6920508070707", "1234567", 2.718281828459045]
    with decimal.localcontext() as ctx:
        ctx.prec = 5
        assert [e.normalize("149.69205080707070"), e.normalize("1,234,567.000"),
                e.parse_number("2.718281828459045")] == want
