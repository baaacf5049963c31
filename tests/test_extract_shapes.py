"""The reader split by answer shape (issue 48): ``assay.models.extract`` is a package of one module per shape
(markers, values, numbers, choices, labels); every extractor reads every response of every corpus in
``tests/fixtures/live_corpus`` exactly as the single module it was split from did.

``extract_snapshot.json`` holds, per corpus file, a short hash of what 14 extractor calls return on each response
(written from the single module at the split; regenerate with ``ASSAY_WRITE_EXTRACT_SNAPSHOT=1`` only when a rule is
meant to change, and say so in the commit)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import assay.models.extract as e

CORPUS = Path(__file__).parent / "fixtures" / "live_corpus"
SNAPSHOT = CORPUS / "extract_snapshot.json"


def _outputs(rec: dict) -> str:
    text, prompt = rec.get("response"), rec.get("prompt")
    cut = rec.get("finish_reason") == "length"

    def safe(f, *a, **k):
        try:
            return repr(f(*a, **k))
        except Exception as x:  # noqa: BLE001 - an error is an output too
            return "ERR " + type(x).__name__

    options = e.parse_options(prompt) if isinstance(prompt, str) else None
    out = [safe(e.strip_reasoning, text), safe(e.extract_boxed, text), safe(e.extract_answer, text),
           safe(e.extract_statement, text), safe(e.extract_auto, text),
           safe(e.extract_number, text, cut_off=cut, question=prompt), safe(e.extract_number, text),
           safe(e.extract_label, text), safe(e.extract_choice, text), safe(e.parse_options, prompt),
           safe(e.extract_choice, text, options=options), safe(e.normalize, text or ""),
           safe(e.parse_number, e.extract_auto(text) if text else None), safe(e.word_number, text or "")]
    return hashlib.sha256("\x1f".join(out).encode()).hexdigest()[:8]


def _all(names=None) -> dict[str, list[str]]:
    return {f.name: [_outputs(json.loads(line)) for line in f.read_text().splitlines() if line.strip()]
            for f in sorted(CORPUS.glob("*.jsonl")) if names is None or f.name in names}


def test_every_extractor_reads_every_corpus_response_as_before_the_split():
    if os.environ.get("ASSAY_WRITE_EXTRACT_SNAPSHOT") == "1":
        SNAPSHOT.write_text(json.dumps(_all(), sort_keys=True, separators=(",", ":")) + "\n")
    want = json.loads(SNAPSHOT.read_text())
    now = _all(set(want))  # the corpora of the split (files added since, e.g. the maths answers, are not in it)
    assert sorted(now) == sorted(want), "a corpus file of the split is gone: regenerate the snapshot"
    changed = [f"{name}:{i}" for name in want for i, (a, b) in enumerate(zip(want[name], now[name])) if a != b]
    assert sum(len(v) for v in want.values()) >= 6688 and not changed, f"{len(changed)} responses read differently: " \
        f"{changed[:10]}"


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
