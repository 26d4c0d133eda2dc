"""Page-number pagination with ``count``, ``next``, ``previous``, ``results`` and a bounded page size."""

from rest_framework import exceptions, pagination

from core.text_rules import ascii_id


class PageNumberPagination(pagination.PageNumberPagination):
    """``?page=N`` (1-based; a page past the end is 404) and ``?page_size=M`` (1..200, default ``PAGE_SIZE``).

    A ``page_size`` that is not a whole number in 1..200 is a 400 with a field message, rather than
    silently ignored, so a client learns about its typo.
    """

    page_size_query_param = "page_size"
    max_page_size = 200

    def get_page_size(self, request):
        raw = request.query_params.get(self.page_size_query_param)
        if raw is None:
            return self.page_size
        size = ascii_id(raw, max_digits=3)
        if size is None or not 1 <= size <= self.max_page_size:
            raise exceptions.ValidationError(
                {self.page_size_query_param: [f"A whole number from 1 to {self.max_page_size}."]}
            )
        return size

    def get_schema_operation_parameters(self, view):
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_query_param:
                parameter["schema"] = {"type": "integer", "minimum": 1}
            elif parameter["name"] == self.page_size_query_param:
                parameter["schema"] = {"type": "integer", "minimum": 1, "maximum": self.max_page_size}
        return parameters
