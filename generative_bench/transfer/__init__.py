"""The transfer matrix: the verified human conversations of each round replayed on each generative model,
the attack success rate by source round and model (docs/benchmarking.md, "Transfer matrix")."""
