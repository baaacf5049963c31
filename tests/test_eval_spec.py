"""The campaign file of `assay eval`: valid files load into the documented dataclasses; every bad one is an
AssayInputError that names the file, the key and what would be accepted (never a traceback, never a key echoed)."""

import copy
import dataclasses
import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assay.errors import AssayInputError
from assay.eval import (
    GENERATORS,
    SECTIONS,
    BankSpec,
    Budget,
    Campaign,
    CompareSpec,
    FaqSpec,
    JudgeSpec,
    KpiSpec,
    ModelSpec,
    ScopeSpec,
    SirenSpec,
    load_campaign,
    parse_campaign,
)

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "campaign.toml"
SECRET = "sk-" + "Q7x" * 12


def _write_inputs(folder: Path) -> Path:
    (folder / "data").mkdir(exist_ok=True)
    (folder / "data" / "bank.csv").write_text("id,prompt,reference,options\nq1,2+2?,4,\"3,4\"\n")
    (folder / "data" / "history.csv").write_text("model,item,score\nm1,q1,1\n")
    (folder / "data" / "human.csv").write_text("item,label\nq1,0\n")
    (folder / "rubric.yaml").write_text("template: 'Q {question} R {reference} A {answer} CORRECT or INCORRECT'\n")
    (folder / "space.json").write_text("{}\n")
    (folder / "notes.txt").write_text("not a table\n")
    return folder


@pytest.fixture
def inputs(tmp_path):
    return _write_inputs(tmp_path)


@pytest.fixture(scope="module")
def shared_inputs(tmp_path_factory):
    return _write_inputs(tmp_path_factory.mktemp("campaign"))


FULL = """
[campaign]
name = "full-1.0"
seed = 7
confidence = 0.9
out = "reports/full"
journal = "journal.sqlite"

[budget]
questions = 100
tokens = 50000
dollars = 2

[[model]]
name = "a"
endpoint = "https://api.example.com/v1"
model = "org/model-a"
api_key_env = "EXAMPLE_API_KEY"
template = "Q: {question}\\nOptions: {choices}\\nAnswer as JSON {\\"answer\\": ...}"
system = "Be brief."
temperature = 1
max_tokens = 32
completions = true
price_in = 0.5
price_out = 1.5
context_window = 4096
concurrency = 2
timeout = 30

[[model]]
name = "b"
endpoint = "http://127.0.0.1:8080/v1"
model = "local"
price_out = 0.1

[bank]
path = "data/bank.csv"
id_col = "id"
prompt_col = "prompt"
reference_col = "reference"
choices_col = "options"
scorer = "numeric"
scorer_col = "kind"
policy = "missing"

[faq]
history = "data/history.csv"
budget = 20
until_width = 0.1
fallback = 0.0
calibrate = false

[scope]
generator = "reasoning_gym:shortest_path"
space = "space.json"
budget = 500
certify = 0.3
utility = "cwe"

[judge]
endpoint = "http://127.0.0.1:8081/v1"
model = "judge"
api_key_env = "JUDGE_KEY"
completions = true
rubric = "rubric.yaml"
human_labels = "data/human.csv"
human_col = "label"
risk_target = 0.2
loss = "rubric"

[kpi]
metrics = ["latency_s", "ttft_s", "prompt_tokens", "completion_tokens", "cost"]
select = "top_k"
k = 2
target = 0.99
band = "dkw"

[siren]
configurations = "models"
budgets = [1, 2]
splits = 10

[compare]
budget = 60
margin = 0.05
batch = 5
"""

MINIMAL = """
[campaign]
name = "tiny"

[[model]]
name = "m"
endpoint = "http://localhost:8000/v1"
model = "m"

[scope]
budget = 10
"""


def test_full_file_loads_every_key(inputs, monkeypatch):
    monkeypatch.setenv("EXAMPLE_API_KEY", SECRET)
    (inputs / "campaign.toml").write_text(FULL)
    c = load_campaign(inputs / "campaign.toml")
    assert (c.name, c.seed, c.confidence, c.delta) == ("full-1.0", 7, 0.9, 0.1)
    assert c.out == inputs / "reports" / "full" and c.journal == inputs / "journal.sqlite"
    assert c.budget == Budget(questions=100, tokens=50000, dollars=2.0) and isinstance(c.budget.dollars, float)
    a, b = c.models
    assert a == ModelSpec(name="a", endpoint="https://api.example.com/v1", model="org/model-a",
                          api_key_env="EXAMPLE_API_KEY", template=a.template, system="Be brief.", temperature=1.0,
                          max_tokens=32, completions=True, price_in=0.5, price_out=1.5, context_window=4096,
                          concurrency=2, timeout=30.0)
    assert '{"answer": ...}' in a.template and isinstance(a.temperature, float)
    assert (b.template, b.temperature, b.max_tokens, b.concurrency, b.timeout) == ("{question}", 0.0, 512, 4, 60.0)
    assert c.bank == BankSpec(path=inputs / "data" / "bank.csv", choices_col="options", scorer="numeric",
                              scorer_col="kind", policy="missing")
    assert c.faq == FaqSpec(history=inputs / "data" / "history.csv", budget=20, until_width=0.1, fallback=0.0,
                            calibrate=False)
    assert c.scope == ScopeSpec(generator="reasoning_gym:shortest_path", space=inputs / "space.json", budget=500,
                                certify=0.3, utility="cwe")
    assert c.judge == JudgeSpec(endpoint="http://127.0.0.1:8081/v1", model="judge", api_key_env="JUDGE_KEY",
                                completions=True, rubric=inputs / "rubric.yaml",
                                human_labels=inputs / "data" / "human.csv",
                                human_col="label", risk_target=0.2, loss="rubric")
    assert c.kpi == KpiSpec(metrics=("latency_s", "ttft_s", "prompt_tokens", "completion_tokens", "cost"),
                            select="top_k", k=2, target=0.99, band="dkw")
    assert c.siren == SirenSpec(budgets=(1, 2), splits=10)
    assert c.compare == CompareSpec(budget=60, margin=0.05, batch=5)
    assert c.sections() == list(SECTIONS)
    assert c.source == (inputs / "campaign.toml").resolve()

    d = c.to_dict()
    text = json.dumps(d, allow_nan=False)
    assert json.loads(text) == d and SECRET not in text and "EXAMPLE_API_KEY" in text
    assert d["campaign"]["delta"] == 0.1 and d["bank"]["path"] == str(inputs / "data" / "bank.csv")
    assert [m["name"] for m in d["model"]] == ["a", "b"] and d["kpi"]["metrics"][0] == "latency_s"
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.seed = 1  # type: ignore[misc]


def test_minimal_file_takes_the_defaults(inputs):
    (inputs / "campaign.toml").write_text(MINIMAL)
    c = load_campaign(inputs / "campaign.toml")
    assert (c.seed, c.confidence, c.delta, c.journal) == (0, 0.95, 0.05, None)
    assert c.out == inputs / "tiny-report"
    assert c.budget == Budget() and c.bank is None
    assert c.scope == ScopeSpec(budget=10) and c.scope.generator == "dyval" and c.scope.utility == "error"
    assert c.sections() == ["scope"]
    assert set(c.to_dict()) == {"campaign", "budget", "model", "scope"}


def test_fingerprint_is_stable_and_sensitive(inputs):
    (inputs / "campaign.toml").write_text(FULL)
    first = load_campaign(inputs / "campaign.toml")
    again = load_campaign(inputs / "campaign.toml")
    assert re.fullmatch(r"[0-9a-f]{16}", first.fingerprint()) and first.fingerprint() == again.fingerprint()
    assert first == again
    (inputs / "campaign.toml").write_text(FULL.replace("seed = 7", "seed = 8"))
    assert load_campaign(inputs / "campaign.toml").fingerprint() != first.fingerprint()
    # comments and key order do not change the campaign
    (inputs / "campaign.toml").write_text("# a comment\n" + FULL.replace('seed = 7\nconfidence = 0.9',
                                                                          'confidence = 0.9\nseed = 7'))
    assert load_campaign(inputs / "campaign.toml").fingerprint() == first.fingerprint()


def test_the_documented_example_loads_and_documents_every_key():
    c = load_campaign(EXAMPLE)
    assert c.sections() == list(SECTIONS) and len(c.models) >= 2
    assert c.bank is not None and c.bank.path.is_file() and c.faq is not None and c.faq.history.is_file()
    text = EXAMPLE.read_text()
    for cls in _CLASSES:
        for f in dataclasses.fields(cls):
            if "check" in f.metadata:
                documented = re.search(rf"^#?\s*{f.name}\s*=", text, re.MULTILINE)
                assert documented, f"{cls.__name__}.{f.name} is not in the example"


def test_generators_are_the_registry_names():
    from assay.benchmarks import _REGISTRY, generator_names

    # the generators assay ships (other tests register their own in the same process)
    builtin = {n for n in generator_names() if getattr(_REGISTRY[n], "__module__", "").startswith("assay.")}
    assert set(GENERATORS) == builtin


# -- bad input: one case per class of mistake ----------------------------------------------------------------------


def _base() -> dict:
    return {
        "campaign": {"name": "c", "seed": 1},
        "budget": {"questions": 10},
        "model": [{"name": "a", "endpoint": "http://h/v1", "model": "x", "price_in": 1.0},
                  {"name": "b", "endpoint": "http://h/v1", "model": "x", "price_out": 1.0}],
        "bank": {"path": "data/bank.csv", "choices_col": "options"},
        "faq": {"history": "data/history.csv"},
        "scope": {"budget": 10},
        "judge": {"endpoint": "http://h/v1", "model": "j", "risk_target": 0.1},
        "kpi": {"metrics": ["latency_s", "cost"]},
        "siren": {"budgets": [1, 2]},
    }


def _set(path: str, value):
    """A mutation setting the key at a dotted path ("model.1.temperature"); value DELETE removes it."""
    def mutate(d):
        *parents, last = path.split(".")
        for p in parents:
            d = d[int(p)] if p.isdigit() else d[p]
        if value is DELETE:
            del d[int(last) if last.isdigit() else last]
        else:
            d[int(last) if last.isdigit() else last] = value
    return mutate


DELETE = object()


def _keep(*names):
    def mutate(d):
        for k in [k for k in d if k not in ("campaign", "model", *names)]:
            del d[k]
    return mutate


BAD = {
    "faq budget negative": (_set("faq.budget", -3), [("campaign.toml: [faq].budget must be a fraction in (0, 1] or a "
                                                     "whole number of questions >= 2; got -3")]),
    "faq budget one": (_set("faq.budget", 1), ["[faq].budget", "write 1.0"]),
    "faq budget as text": (_set("faq.budget", "5%"), ["[faq].budget", "got '5%'"]),
    "faq without history": (_set("faq.history", DELETE), ["[faq].history is required", "existing file"]),
    "fallback at one half": (_set("faq.fallback", 0.5), ["[faq].fallback must be a number in [0, 0.5)"]),
    "no campaign section": (_set("campaign", DELETE), ["[campaign] section is required"]),
    "campaign not a table": (_set("campaign", "c"), ["[campaign] must be a table", "got 'c'"]),
    "bad campaign name": (_set("campaign.name", "my campaign!"), ["[campaign].name", "letters, digits"]),
    "negative seed": (_set("campaign.seed", -1), ["[campaign].seed must be a whole number >= 0; got -1"]),
    "seed as float": (_set("campaign.seed", 1.5), ["[campaign].seed", "got 1.5"]),
    "confidence of one": (_set("campaign.confidence", 1.0), ["[campaign].confidence must be a number in (0.5, 1)"]),
    "confidence nan": (_set("campaign.confidence", float("nan")), ["[campaign].confidence", "got nan"]),
    "unknown key": (_set("faq.budgt", 3), ["unknown key [faq].budgt", "did you mean 'budget'?", "[faq] takes:"]),
    "unknown model key": (_set("model.1.temprature", 0.2), ["unknown key [[model]] #2 .temprature",
                                                            "did you mean 'temperature'?"]),
    "unknown section": (_set("fak", {}), ["unknown section [fak]", "did you mean 'faq'?"]),
    "section key at top level": (_set("seed", 3), ["unknown section [seed]", "[campaign]"]),
    "single-bracket model": (_set("model", {"name": "a", "endpoint": "http://h", "model": "x"}), ["[[model]]",
                                                                                                  "two brackets"]),
    "no models": (_set("model", DELETE), ["at least one [[model]] block is required"]),
    "empty models": (_set("model", []), ["[[model]] must be one or more"]),
    "model not a table": (_set("model.0", "gpt"), ["[[model]] #1 must be a table"]),
    "duplicate model names": (_set("model.1.name", "a"),
                              ["[[model]] #2 .name 'a' is already the name of [[model]] #1"]),
    "model without endpoint": (_set("model.0.endpoint", DELETE), ["[[model]] #1 .endpoint is required", "URL"]),
    "endpoint not http": (_set("model.0.endpoint", "ftp://h/v1"), [("[[model]] #1 .endpoint must be an http:// or "
                                                                   "https:// URL; got 'ftp://h/v1'")]),
    "endpoint without host": (_set("model.0.endpoint", "http:///v1"), ["[[model]] #1 .endpoint"]),
    "lowercase env name": (_set("model.0.api_key_env", "my_key"), ["[[model]] #1 .api_key_env", ("NAME of an "
                                                                   "environment variable")]),
    "temperature too high": (_set("model.1.temperature", 2.5), [("campaign.toml: [[model]] #2 .temperature must be a "
                                                                "number in [0, 2]; got 2.5")]),
    "temperature as bool": (_set("model.1.temperature", True), ["[[model]] #2 .temperature", "got True"]),
    "max_tokens zero": (_set("model.0.max_tokens", 0), ["[[model]] #1 .max_tokens must be a whole number >= 1"]),
    "completions as text": (_set("model.0.completions", "yes"), ["[[model]] #1 .completions must be true or false"]),
    "negative price": (_set("model.0.price_in", -1), ["[[model]] #1 .price_in must be a number >= 0"]),
    "tiny context window": (_set("model.0.context_window", 8), ["[[model]] #1 .context_window", ">= 16"]),
    "zero timeout": (_set("model.0.timeout", 0), ["[[model]] #1 .timeout must be a number > 0"]),
    "template without question": (_set("model.0.template", "Answer: {choices}"), ["[[model]] #1 .template",
                                                                                   "no {question}"]),
    "template unknown placeholder": (_set("model.0.template", "{question} {context}"), [("unknown placeholder "
                                                                                       "{context}")]),
    "choices without a column": (lambda d: (d["bank"].pop("choices_col"), d["model"][1].update(template="{question} "
                                                                                                "{choices}")),
                                 ["[[model]] #2 .template uses {choices}", "[bank].choices_col"]),
    "missing bank file": (_set("bank.path", "data/nope.csv"), ["[bank].path must be an existing file", "no file at"]),
    "bank of the wrong kind": (_set("bank.path", "notes.txt"), ["[bank].path", "(.csv, .jsonl, .parquet)",
                                                                "a .txt file"]),
    "bank path is a folder": (_set("bank.path", "data"), ["[bank].path", "no file at"]),
    "scorer typo": (_set("bank.scorer", "exat"), ["[bank].scorer must be one of", "did you mean 'exact'?"]),
    "unknown policy": (_set("bank.policy", "skip"), ["[bank].policy must be one of 'wrong', 'missing', 'correct'"]),
    "bank missing for faq": (_set("bank", DELETE), ["[faq], [judge], [kpi], [siren] ask questions from an item bank"]),
    "no method section": (_keep("bank"), ["at least one method section"]),
    "unknown generator": (_set("scope.generator", "dyvall"), ["[scope].generator", "did you mean 'dyval'?"]),
    "reasoning gym without task": (_set("scope.generator", "reasoning_gym"), ["name the task"]),
    "scope without budget": (_set("scope.budget", DELETE), ["[scope].budget is required"]),
    "certify out of range": (_set("scope.certify", 1.0), ["[scope].certify must be a number in (0, 1)"]),
    "missing space file": (_set("scope.space", "space.yaml"), ["[scope].space", "no file at"]),
    "judge without risk target": (_set("judge.risk_target", DELETE), ["[judge].risk_target is required"]),
    "unknown rubric": (_set("judge.rubric", "strict"), ["[judge].rubric must be 'default', 'fewshot' or an existing"]),
    "missing human labels": (_set("judge.human_labels", "h.csv"), ["[judge].human_labels", "no file at"]),
    "unknown loss": (_set("judge.loss", "hinge"), ["[judge].loss must be one of '0-1', 'rubric'"]),
    "empty kpi metrics": (_set("kpi.metrics", []), ["[kpi].metrics must be a non-empty list"]),
    "unknown kpi metric": (_set("kpi.metrics", ["latency", "cost"]), ["[kpi].metrics", "item #1",
                                                                      "did you mean 'latency_s'?"]),
    "repeated kpi metric": (_set("kpi.metrics", ["cost", "cost"]), ["[kpi].metrics", "repeated"]),
    "metrics not a list": (_set("kpi.metrics", "cost"), ["[kpi].metrics must be a non-empty list"]),
    "cost without a price": (_set("model.1.price_out", 0), ["[kpi].metrics has 'cost'", "[[model]] #2 ('b')"]),
    "top_k without k": (_set("kpi.select", "top_k"), ["[kpi].k is required with select = 'top_k'"]),
    "k without top_k": (_set("kpi.k", 1), ["[kpi].k is only used with select = 'top_k'"]),
    "k above the models": (lambda d: d["kpi"].update(select="top_k", k=3), [("[kpi].k must be at most the number of "
                                                                           "models (2); got 3")]),
    "unknown band": (_set("kpi.band", "berk-jones"), ["[kpi].band must be one of 'dkw', 'bj'"]),
    "siren with one model": (lambda d: (d["model"].pop(), d.pop("kpi"), d["siren"].update(budgets=[1])),
                             ["[siren]", "at least 2 [[model]] blocks; got 1"]),
    "siren budgets decrease": (_set("siren.budgets", [2, 1]), ["[siren].budgets", "not increasing"]),
    "siren budgets exceed models": (_set("siren.budgets", [1, 5]), ["[siren].budgets can try at most the 2"]),
    "siren splits one": (_set("siren.splits", 1), ["[siren].splits must be a whole number >= 2"]),
    "budget zero dollars": (_set("budget.dollars", 0), ["[budget].dollars must be a number > 0"]),
    "budget infinite tokens": (_set("budget.tokens", float("inf")), ["[budget].tokens", "got inf"]),
    "compare unknown goal": (_set("compare", {"goal": "fastest"}), ["[compare].goal must be one of 'all', 'best'"]),
    "compare top-k without k": (_set("compare", {"goal": "top-k"}), ["[compare].k is required with goal = 'top-k'"]),
    "compare k without top-k": (_set("compare", {"k": 1}), ["[compare].k is only used with goal = 'top-k'"]),
    "compare k of every model": (_set("compare", {"goal": "top-k", "k": 2}),
                                 ["[compare].k must be less than the number of models (2); got 2"]),
    "compare unknown guarantee": (_set("compare", {"guarantee": "exact"}), ["[compare].guarantee must be one of"]),
    "compare missing history": (_set("compare", {"history": "past.csv"}), ["[compare].history", "no file at",
                                                                           "FAQ pack"]),
    "section not a table": (_set("faq", 3), ["[faq] must be a table of keys"]),
    "section as array": (_set("kpi", [{"metrics": ["cost"]}]), ["[kpi] must be a table of keys"]),
}


@pytest.mark.parametrize("case", list(BAD), ids=list(BAD))
def test_bad_input_names_the_file_key_and_what_is_accepted(inputs, case):
    mutate, expected = BAD[case]
    data = _base()
    parse_campaign(copy.deepcopy(data), source="campaign.toml", base=inputs)  # the base itself is valid
    mutate(data)
    with pytest.raises(AssayInputError) as err:
        parse_campaign(data, source="campaign.toml", base=inputs)
    message = str(err.value)
    assert message.startswith("campaign.toml: ")
    for part in expected:
        assert part in message, f"{part!r} not in {message!r}"


@pytest.mark.parametrize("where", ["model.0.api_key", "judge.model", "campaign.journal", "model.1.system"])
def test_a_pasted_api_key_is_refused_and_never_echoed(inputs, where):
    data = _base()
    _set(where, SECRET)(data)
    with pytest.raises(AssayInputError) as err:
        parse_campaign(data, source="campaign.toml", base=inputs)
    message = str(err.value)
    assert SECRET not in message and SECRET[:12] not in message
    assert "looks like an API key" in message and "environment variable" in message and "api_key_env" in message
    section, *rest = where.split(".")
    assert (f"[[{section}]] #{int(rest[0]) + 1} .{rest[1]}" if section == "model" else f"[{section}].{rest[0]}") \
        in message


def test_a_key_in_the_file_is_refused_before_toml_types(inputs):
    (inputs / "campaign.toml").write_text(MINIMAL.replace('model = "m"', f'model = "m"\napi_key = "{SECRET}"'))
    with pytest.raises(AssayInputError, match=r"\[\[model\]\] #1 \.api_key looks like an API key") as err:
        load_campaign(inputs / "campaign.toml")
    assert SECRET not in str(err.value)


def test_short_sk_strings_are_not_keys(inputs):
    (inputs / "campaign.toml").write_text(MINIMAL.replace('model = "m"', 'model = "sk-small"'))
    assert load_campaign(inputs / "campaign.toml").models[0].model == "sk-small"


def test_file_level_errors(inputs):
    with pytest.raises(AssayInputError, match=r"nope\.toml: no such campaign file"):
        load_campaign(inputs / "nope.toml")
    with pytest.raises(AssayInputError, match="is a directory, not a campaign file"):
        load_campaign(inputs / "data")
    (inputs / "broken.toml").write_text('[campaign]\nname = "x"\nseed = = 3\n')
    with pytest.raises(AssayInputError, match=r"broken\.toml, line 3, column \d+: not valid TOML: ") as err:
        load_campaign(inputs / "broken.toml")
    assert "(at line" not in str(err.value)
    (inputs / "twice.toml").write_text('[campaign]\nname = "x"\nname = "y"\n')
    with pytest.raises(AssayInputError, match=r"twice\.toml, line 3, column \d+: not valid TOML"):
        load_campaign(inputs / "twice.toml")
    (inputs / "latin1.toml").write_bytes('[campaign]\nname = "caf\u00e9"\n'.encode("latin-1"))
    with pytest.raises(AssayInputError, match=r"latin1\.toml: not UTF-8 text"):
        load_campaign(inputs / "latin1.toml")
    (inputs / "empty.toml").write_text("")
    with pytest.raises(AssayInputError, match=r"empty\.toml: the \[campaign\] section is required"):
        load_campaign(inputs / "empty.toml")


def test_paths_resolve_against_the_campaign_folder_not_the_cwd(inputs, tmp_path_factory, monkeypatch):
    (inputs / "campaign.toml").write_text(FULL)
    monkeypatch.chdir(tmp_path_factory.mktemp("elsewhere"))
    c = load_campaign(inputs / "campaign.toml")
    assert c.bank.path == inputs / "data" / "bank.csv" and c.out == inputs / "reports" / "full"


# -- properties: garbage in, AssayInputError out ------------------------------------------------------------------

_CLASSES = (Campaign, Budget, ModelSpec, BankSpec, FaqSpec, ScopeSpec, JudgeSpec, KpiSpec, SirenSpec, CompareSpec)
_NAMES = sorted({f.name for cls in _CLASSES for f in dataclasses.fields(cls)}
                | {"campaign", "budget", "model", "bank", *SECTIONS})
_LEAVES = st.one_of(st.none(), st.booleans(), st.integers(), st.integers(min_value=-(2**70), max_value=2**70),
                    st.floats(), st.text(max_size=20), st.dates(), st.datetimes(),
                    st.sampled_from([SECRET, "{question}", "{choices}", "http://h/v1", "data/bank.csv",
                                     "data/history.csv", "dyval", "reasoning_gym:x", "top_k", "cost", "models", "bj",
                                     "a" * 300, "\0", "~nobody-here/x", "../" * 50]))
_GARBAGE = st.recursive(_LEAVES, lambda inner: st.lists(inner, max_size=4)
                        | st.dictionaries(st.sampled_from(_NAMES) | st.text(max_size=6) | st.integers(), inner,
                                          max_size=5),
                        max_leaves=25)
_SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.slow
@_SETTINGS
@given(data=st.dictionaries(st.sampled_from(_NAMES) | st.text(max_size=6), _GARBAGE, max_size=8))
def test_random_garbage_raises_assay_input_error_only(shared_inputs, data):
    with pytest.raises(AssayInputError) as err:
        parse_campaign(data, source="campaign.toml", base=shared_inputs)
    assert str(err.value).startswith("campaign.toml") and SECRET not in str(err.value)


def _leaf_paths(value, prefix=()):
    if isinstance(value, dict):
        for k, v in value.items():
            yield prefix + (k,)
            yield from _leaf_paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield prefix + (i,)
            yield from _leaf_paths(v, prefix + (i,))


_BASE_PATHS = list(_leaf_paths(_base()))


@_SETTINGS
@given(where=st.sampled_from(_BASE_PATHS), value=_GARBAGE)
def test_one_garbage_value_in_a_valid_campaign(shared_inputs, where, value):
    data = _base()
    target = data
    for part in where[:-1]:
        target = target[part]
    target[where[-1]] = value
    try:
        c = parse_campaign(data, source="campaign.toml", base=shared_inputs)
    except AssayInputError as e:
        assert str(e).startswith("campaign.toml: ") and SECRET not in str(e)
    else:
        assert json.loads(json.dumps(c.to_dict(), allow_nan=False)) == c.to_dict()
        assert c.fingerprint() == parse_campaign(_copy_with(where, value), source="x", base=shared_inputs).fingerprint()


def _copy_with(where, value):
    data = _base()
    target = data
    for part in where[:-1]:
        target = target[part]
    target[where[-1]] = copy.deepcopy(value)
    return data


def test_compare_takes_a_goal_a_guarantee_and_a_history_by_pack_name(inputs):
    data = _base()
    data["compare"] = {"goal": "best", "guarantee": "asymptotic", "history": "faq-mmlu-pro"}
    c = parse_campaign(data, source="campaign.toml", base=inputs)
    assert (c.compare.goal, c.compare.k, c.compare.guarantee, c.compare.history) == (
        "best", None, "asymptotic", "faq-mmlu-pro")
