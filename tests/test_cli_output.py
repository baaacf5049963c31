"""What the terminal shows: user names literally (no rich markup), flags as flags in --help, assay's warnings in
CLI words (never a raw Python warning with a file path), QuickScope and study results as tables."""

import re
import warnings

import numpy as np
import pandas as pd
from typer.testing import CliRunner

from assay.cli import app
from assay.cli.guard import guard

runner = CliRunner()


def _siren_table(path, names):
    rng = np.random.default_rng(0)
    rows = []
    for s in names:
        for b, k in ((0, 1), ("1M", 3)):
            for a in range(k):
                p = 0.5 + 0.05 * a
                for i in range(120):
                    rows.append({"system": s, "budget": b, "artifact": f"p{a}", "item": f"q{i}",
                                 "score": float(rng.random() < p)})
    pd.DataFrame(rows).to_csv(path, index=False)


def test_names_with_brackets_print_literally(tmp_path):
    f = tmp_path / "s.csv"
    _siren_table(f, ["my-model[v2]", "m[a]", "m[b]", "[bold]x"])
    r = runner.invoke(app, ["siren", str(f), "--seed", "0", "--contrast", "m[a]@1M - m[b]@1M", "--temperature", "0.5"])
    assert r.exit_code == 0, r.output
    for name in ("my-model[v2]", "m[a]", "m[b]", "[bold]x", "m[a]@1M - m[b]@1M"):
        assert name in r.stdout, name
    assert "temperature = 0.5" in r.stdout and "tau" not in r.stdout


def test_json_is_a_flag_in_help():
    for cmd in ("siren", "autoeval", "psdme", "faq", "scope", "study", "query"):
        r = runner.invoke(app, [cmd, "--help"], env={"COLUMNS": "160"})
        assert r.exit_code == 0
        line = next(ln for ln in r.stdout.splitlines() if "--json" in ln)
        assert "<bool>" not in line and "BOOLEAN" not in line, (cmd, line)


def test_python_warnings_are_worded_for_the_cli(capsys):
    import assay.faq  # noqa: F401  (an assay module: its warnings are assay's own)

    import typer

    @guard
    def command(weight_decay: float = typer.Option(1.0, "--weight-decay")):  # a command with that option
        warnings.warn_explicit("pass weight_decay=3.0 to fit less", UserWarning, filename=assay.faq.__file__, lineno=1)
        warnings.warn_explicit("pass weight_decay=3.0 to fit less", UserWarning, filename=assay.faq.__file__, lineno=2)
        np.log(np.zeros(1))  # numpy's RuntimeWarning: not shown
        return 1

    assert command(1.0) == 1
    err = capsys.readouterr().err
    assert err.count("warning: pass --weight-decay 3.0 to fit less") == 1
    assert ".py" not in err and "RuntimeWarning" not in err and "divide by zero" not in err


def test_scope_and_study_print_tables():
    r = runner.invoke(app, ["scope", "--simulate", "plateau", "--budget", "400", "--certify", "0.9", "--seed", "1"])
    assert r.exit_code == 0, r.output
    assert "┃ template" in r.stdout or "template" in r.stdout.splitlines()[2]
    assert "99% bounds (all at once)" in r.stdout and "tau = None" not in r.stdout
    assert not re.search(r"\b\d+\.0\b", r.stdout.split("Rows:")[0])  # counts as integers
    r = runner.invoke(app, ["scope", "--simulate", "plateau", "--budget", "100"])
    assert r.exit_code == 0 and "no certificate threshold" in r.stdout and "None" not in r.stdout
    r = runner.invoke(app, ["study", "siren-b", "--M", "100", "--R", "2", "--trials", "5", "--gt", "20", "--boot", "20"])
    assert r.exit_code == 0, r.output
    assert re.search(r"┃\s+gap\s+┃", r.stdout) and "│ hard" in r.stdout
    assert "note:" in r.stdout


def test_an_error_names_only_options_its_command_has():
    """cli_words translates the library's Python words into the running command's options and never names an option
    that command lacks (`reference_col` became `--reference-col` on commands without one): every command, every
    argument name any command or the library's messages use, every special phrase."""
    import re

    import typer.main

    from assay.cli import app
    from assay.cli.guard import _COLUMN_FLAGS, _PHRASES, _RENAMED, cli_words, command_options

    def commands(cmd, pre=""):
        for n, sub in getattr(cmd, "commands", {}).items():
            yield from commands(sub, f"{pre}{n} ") if getattr(sub, "commands", None) else [(f"{pre}{n}", sub)]

    cmds = list(commands(typer.main.get_command(app)))
    names = {n for _, c in cmds for n in (command_options(c) or {})} | set(_RENAMED) | {
        "bank", "log_scorer", "id_col", "prompt_col", "reference_col", "columns", "n", "budget", "plan", "method"}
    message = " ".join([f"give {n}= or {n}=3 or {n}='x';" for n in sorted(names)] + list(_PHRASES)
                       + ["Name yours with columns={'loss_judge': 'YOUR_COLUMN', 'item': 'YOUR_COLUMN'}.",
                          "Rename yours (from Python: id_col= / prompt_col= / reference_col=)"]
                       + [f"columns={{'{c}': 'YOUR_COLUMN'}}" for c in _COLUMN_FLAGS])
    flag = re.compile(r"(?<![\w-])--[a-z][\w-]*")
    for name, cmd in cmds:
        have = set(command_options(cmd).values()) | {o for p in cmd.params for o in getattr(p, "opts", [])}
        said = set(flag.findall(cli_words(message, command_options(cmd))))
        assert said <= have, (name, sorted(said - have))
    # the options are read (typer ships its own copy of click: read by their `opts`, every command has some), and a
    # command that has the option gets it named: `assay query` has --reference-col, `assay compare` has not
    assert all(command_options(cmd) for _, cmd in cmds if any(getattr(p, "opts", None) for p in cmd.params))
    said = "Rename yours (from Python: id_col= / prompt_col= / reference_col=)"
    assert "--reference-col" in cli_words(said, command_options(dict(cmds)["query"]))
    assert cli_words(said, command_options(dict(cmds)["compare"])) == "Rename yours"
    # the guard reads the options from the command's own function: the same mapping
    from assay.cli.compare import compare as compare_fn

    assert command_options(compare_fn) == command_options(dict(cmds)["compare"])
    # the check can fail: translated for every command at once, as before, it names options some command lacks
    audit = dict(cmds)["audit"]
    have = {o for p in audit.params for o in getattr(p, "opts", [])}
    assert set(flag.findall(cli_words(message))) - have
