"""Judges: generative models answering a task's rubric, with their agreement with people measured
(docs/benchmarking.md)."""
