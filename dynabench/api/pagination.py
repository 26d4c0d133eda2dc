"""Page-number pagination with ``count``, ``next``, ``previous``, ``results`` and a bounded page size."""

from rest_framework import pagination


class PageNumberPagination(pagination.PageNumberPagination):
    """``?page=N`` (1-based) and ``?page_size=M`` (1..200, default ``PAGE_SIZE``)."""

    page_size_query_param = "page_size"
    max_page_size = 200
