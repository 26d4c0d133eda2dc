"""Admin of this sub-package (imported by generative_bench/admin.py)."""
