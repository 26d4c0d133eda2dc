"""Replay: a round's settled prompts sent to any registered generative model (docs/benchmarking.md)."""
