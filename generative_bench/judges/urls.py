"""Pages of this sub-package (included by generative_bench/urls.py)."""

urlpatterns: list = []
