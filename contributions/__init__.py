"""The catalogue (papers, tasks, immutable task versions, snippets, releases) and the contribution workflow
(proposals, their revisions, validation reports, reviews, comments, notifications), in the rooms every app
has:

- ``models.py``: the rows;
- ``services/``: the writes, one module per entity or stage (``services/proposal_state.py`` is the proposal
  state machine every stage moves through);
- ``selectors/``: the reads, one module per page family (callers import the module they need);
- ``views/``: the pages, thin (parse, call a service or selector, render); contributions has no JSON API
  of its own (the portal's are ``evaluation.api`` and ``leaderboard.api``).

contributions has no Celery work, so it has no ``tasks.py`` and no ``dispatch.py``: a proposal's validation
runs in the evaluation app, which hears of a submission through ``signals.revision_submitted`` and reports
back through ``services.proposal_validation``, whose watchdog evaluation's beat runs
(``evaluation.tasks.validations_watchdog``).

Beside the rooms, plain modules both services and selectors build on: ``proposal_status`` (a proposal's
status in words), ``task_folders`` and ``task_meta`` (a version's files and registry entry),
``upload_manifest`` and ``intake`` (reading an upload), ``benchmark_repo`` (the benchmark's git
repository), ``roles``, ``forms``, ``markdown``, ``citation`` and the small helpers of the views.
"""
