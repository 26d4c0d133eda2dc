"""The task owner's dashboard: its figures (``figures``: rounds, models, training jobs, what waits for
the owner) and its page (``views``)."""
