"""The one-command demo (``make demo``): ``setup.py`` lays out the demo tasks of ``demo_tasks/`` (real
data, real targets trained here, every model evaluated on every round), the demo accounts and the job
cluster's schedules; ``manage.py setup_demo`` and ``manage.py demo_server`` run it. Above every app;
no app imports it.
"""
