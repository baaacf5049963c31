"""Every example in a docstring of the library runs and prints what it says (doctest), so an example cannot rot.

Examples that need a model server or the network are marked ``# doctest: +SKIP`` where they stand."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import assay

MODULES = sorted(m.name for m in pkgutil.walk_packages(assay.__path__, "assay.") if not m.name.endswith("__main__"))


def test_every_module_is_seen():
    assert {"assay.checks", "assay.results", "assay.siren.api", "assay.psdme.api", "assay.autoeval",
            "assay.quickscope.coup", "assay.compare.api"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    res = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, report=True)
    assert res.failed == 0, f"{res.failed} of {res.attempted} docstring examples of {name} failed (printed above)"
