"""The pages of ``contributions``, one module per what they serve: ``catalogue`` (releases; the papers page
is the leaderboard's), ``contribute`` (the contribution form's steps), ``review`` (a proposal's page, the
review queue, comments, reviews, notifications) and ``accounts`` (profile and API tokens)."""
