"""How assay talks to a model: callables, OpenAI-compatible endpoints, the runner and the journal.

>>> from assay.models import OpenAIChatModel, run
>>> model = OpenAIChatModel("meta-llama/Llama-3.1-8B-Instruct", base_url="http://localhost:8000/v1")
>>> result = run(model, ["What is 2 + 2?"], journal="journal.sqlite", run_id="demo")  # doctest: +SKIP
>>> result.responses[0].text  # doctest: +SKIP

``run`` / ``run_prompts`` own concurrency (cap + adaptive backoff on 429/503), the requests-per-minute
limit, retries with jittered exponential backoff honouring ``Retry-After``, per-request timeouts and
the SQLite journal (answers survive ``kill -9``; a run resumes by id without re-requesting).
"""

from .base import CallableModel, Model, Prompt, Response, RetryableError
from .journal import Journal, request_key
from .openai_model import OpenAIChatModel, OpenAICompletionModel
from .runner import RunResult, run, run_prompts

__all__ = ["Response", "RetryableError", "Model", "Prompt", "CallableModel", "OpenAIChatModel", "OpenAICompletionModel",
           "run_prompts", "run", "RunResult", "Journal", "request_key"]
