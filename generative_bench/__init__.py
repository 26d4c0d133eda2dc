"""Benchmarking generative models on what red-teaming rounds collected (docs/benchmarking.md): replaying
a round's prompts against any registered generative model, judge models with measured agreement,
pairwise comparison (arena) ranked by Bradley-Terry, and the generative leaderboard's figures.

Sits above ``crowd`` and below ``leaderboards`` (pyproject.toml [tool.importlinter]): it reads settled
verdicts (validation) and writes rating examples through annotation's services.
"""
