"""The kernel: code every app shares, below all of them (docs/architecture.md).

Text rules, settings parsing (``env.py``), the API toolkit (``api/``), the audit log helpers, metrics,
money rounding, queueing jobs (``job_queue.py``), middleware, the fail-soft cache, health checks, admin
extension points and the idempotency records. It imports no app. Its Django label is ``dynabench``
(``apps.py`` says why).
"""
