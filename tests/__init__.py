"""The test suite: one folder per app, flows across apps, factories and helpers beside them.

accounts/, tasks/, models_registry/, annotation/, validation/, leaderboards/, dynabench/: the behaviour
of that app (its services, pages, admin and API endpoints); dynabench/ holds the project package's
settings, API toolkit (idempotency, permission table, contract, robustness), text rules, metrics,
schema constraints and bad requests.
flows/: end-to-end flows across apps (the demo, a task made from a config alone, the loop of round k
training round k+1, the sentiment, NLI and QA tasks end to end).
factories/: factory_boy factories, one module per app. helpers/: plain helpers (tiny models, fakes, toy
data, API clients, zips, data slices). conftest.py: fixtures several folders use; a folder's conftest.py
holds those only its tests use. Nothing imports a conftest module.
"""
