"""The arena: two anonymous models answer one prompt, a person votes, Bradley-Terry ranks
(docs/benchmarking.md)."""
