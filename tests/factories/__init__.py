"""factory_boy factories of the test suite, one module per app (``tests.factories.<app>``).

Each ``DjangoModelFactory`` writes a plain row with explicit defaults. Objects whose meaning comes from
a service (a built-in task, a current round, a round's targets) are made by plain functions in the same
modules that call that service, so a test relying on what the service does still gets it.
Model classes are named by label ("app.Model") so importing a factory module loads no Django model.
"""
