"""Test-wide settings: fitted FAQ factors are cached in a temporary folder, never in the user's ~/.cache."""

import os
import sys
from pathlib import Path
import tempfile

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # tests/ helpers (live_server, fake_openai_server)


@pytest.fixture(autouse=True, scope="session")
def _private_cache():
    if "ASSAY_CACHE_DIR" in os.environ:
        yield
        return
    with tempfile.TemporaryDirectory(prefix="assay-test-cache-") as d:
        os.environ["ASSAY_CACHE_DIR"] = d
        yield
        os.environ.pop("ASSAY_CACHE_DIR", None)


# -- a real language model (the `live` extra): one llama.cpp server per test process, stopped at the end ---------

def _live_or_skip() -> None:
    from live_server import live_available

    why = live_available()
    if why:
        if os.environ.get("CI"):  # in CI the live tests must run: a missing extra is a failure, not a skip
            pytest.fail(f"live tests need the live extra: {why}")
        pytest.skip(why)


@pytest.fixture(scope="session")
def live_model():
    """SmolLM2-135M-Instruct (Q4_1) served on a free 127.0.0.1 port: ``.base_url``, ``.alias``, ``.death()``."""
    _live_or_skip()
    from live_server import LiveServer, smollm2_path

    with LiveServer(smollm2_path(), alias="smollm2") as server:
        yield server


@pytest.fixture(scope="session")
def live_judge():
    """A second, different model for the judge: Gemma 3 270M (pretrained), used through /v1/completions."""
    _live_or_skip()
    from live_server import LiveServer, gemma3_path

    try:
        path = gemma3_path()
    except Exception as e:  # the package is part of the live extra
        if os.environ.get("CI"):
            pytest.fail(f"the Gemma 3 270M package is missing: {e}")
        pytest.skip(f"the Gemma 3 270M package is missing: {e}")
    with LiveServer(path, alias="gemma3") as server:
        yield server
