"""The annotator leaderboard of a task: its table (``board``: examples, model-fooling rate, vMER per
annotator), its page (``views``) and ``GET /api/tasks/<slug>/annotators/`` (``api``)."""
