"""Reads of the leaderboard: every page, export and API endpoint gets its data here, one module per page.

- ``board``: the board's rows and ranks (``leaderboard_rows``), the filters every page takes
  (``LeaderboardFilters``), which runs are on the board (``board_scores``) and the filter choices;
- ``models``: a model's page (``model_detail``), its failed snippets, the model list and search;
- ``compare``: two or more models side by side (``model_compare``);
- ``picking``: choosing the models to compare: every model for the autocomplete (``model_choices``) and
  the names typed or ticked resolved to keys (``models_pick``: key or display name, case-insensitive);
- ``papers``: a paper's page (``paper_detail``) and the paper list;
- ``snippets``: a snippet's page (``snippet_detail``), finding a snippet by its URL (``snippet_lookup``),
  the problem a model saw (``snippet_problem``) and the snippet list;
- ``analyses``: the error, contamination and ablation pages and the export tables;
- ``common``: what several pages share: ``ModelRef``, ``Score`` and its recombination from per-paper sums,
  error counts by tier, a snippet's difficulty.

Callers import from the module of the page they serve (``from leaderboard.selectors.board import
leaderboard_rows``); this package re-exports nothing.

Contracts common to every selector:

- They read the aggregated read models only (``leaderboard.models``), never raw results, except
  ``snippet_detail`` which lists the individual completions of one snippet (rows, not aggregates) and
  ``snippet_problem`` which rebuilds one snippet's problem from its task version's stored bytes, and
  ``model_detail``'s memorisation figures and the board's (``run_verbatim_shares``), one grouped count over
  the runs' passed completions (the figures are stored on each completion with its verdict: no page
  tokenises code).
- They run a constant number of queries whatever the number of models, runs or papers (tested).
- They return frozen dataclasses (plain values: str, int, float, bool, date, tuples, dicts) that templates,
  serializers and CSV exports read directly. Scores are percentages (0-100); ``None`` means "no score"
  (nothing tested in that selection), never 0.
- ``LeaderboardFilters`` selects runs the same way for every selector that takes it.
"""
