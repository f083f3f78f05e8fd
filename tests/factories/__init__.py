"""The suite's one set of test builders: factory_boy factories per app and the builders made of them.

Import everything from here (``from tests.factories import LanguageModelFactory, make_run``).
"""

from tests.factories.builders import (
    TASKS,
    confirmation_verdict,
    fake_llm_model,
    full_predictions,
    jsonl,
    make_benchmark,
    make_release,
    make_run,
    make_staged_run,
    record_verdicts,
    snippet_results,
)
from tests.factories.contributions import (
    EXAMPLE_MANIFEST,
    PaperFactory,
    ProposalFactory,
    ReleaseEntryFactory,
    ReleaseFactory,
    SnippetFactory,
    TaskFactory,
    TaskVersionFactory,
    example_upload,
)
from tests.factories.evaluation import (
    CompletionFactory,
    EvaluationRunFactory,
    LanguageModelFactory,
    TestResultFactory,
    WorkerHeartbeatFactory,
)
from tests.factories.users import PASSWORD, MaintainerFactory, StaffUserFactory, UserFactory, api_token_for

__all__ = [
    "EXAMPLE_MANIFEST",
    "PASSWORD",
    "TASKS",
    "CompletionFactory",
    "EvaluationRunFactory",
    "LanguageModelFactory",
    "MaintainerFactory",
    "PaperFactory",
    "ProposalFactory",
    "ReleaseEntryFactory",
    "ReleaseFactory",
    "SnippetFactory",
    "StaffUserFactory",
    "TaskFactory",
    "TaskVersionFactory",
    "TestResultFactory",
    "UserFactory",
    "api_token_for",
    "confirmation_verdict",
    "WorkerHeartbeatFactory",
    "example_upload",
    "fake_llm_model",
    "full_predictions",
    "jsonl",
    "make_benchmark",
    "make_release",
    "make_run",
    "make_staged_run",
    "record_verdicts",
    "snippet_results",
]
