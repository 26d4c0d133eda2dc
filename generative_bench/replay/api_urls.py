"""API routes of this sub-package (included by generative_bench/api_urls.py)."""

urlpatterns: list = []
