"""Test-wide settings: fitted FAQ factors are cached in a temporary folder, never in the user's ~/.cache."""

import os
import tempfile

import pytest


@pytest.fixture(autouse=True, scope="session")
def _private_cache():
    if "ASSAY_CACHE_DIR" in os.environ:
        yield
        return
    with tempfile.TemporaryDirectory(prefix="assay-test-cache-") as d:
        os.environ["ASSAY_CACHE_DIR"] = d
        yield
        os.environ.pop("ASSAY_CACHE_DIR", None)
