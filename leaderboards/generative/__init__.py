"""The generative leaderboard of a red-teaming task: its table (``board``: multiple-choice accuracy,
attack success rates, Bradley-Terry, speed and cost under a Dynascore), the evaluation of a generative
model on a round's multiple-choice items (``evaluation``) and the page (``views``). docs/benchmarking.md."""
