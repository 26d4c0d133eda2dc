"""Pairwise judges: a generative model that votes arena battles in both orders, checked for position
bias and against people's votes (docs/benchmarking.md, "Pairwise judges")."""
