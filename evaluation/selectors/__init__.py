"""Reads of the evaluation app, one module per page family or API: ``runs`` (the run list and a run's page),
``counts`` (a run's figures in one pass and the rules verdicts are counted by), ``integrity`` (tampering,
re-judges and confirmation on the run page), ``results`` (a run's results for the read API), ``uploads``,
``language_models`` and ``status`` (the status page)."""
