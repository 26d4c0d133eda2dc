"""Page-number pagination with ``count``, ``next``, ``previous``, ``results`` and a bounded page size."""

from rest_framework import exceptions, pagination


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
        # The length check comes first: int() of a few thousand digits raises ValueError.
        if not (raw.isascii() and raw.isdigit() and len(raw) <= 3 and 1 <= int(raw) <= self.max_page_size):
            raise exceptions.ValidationError(
                {self.page_size_query_param: [f"A whole number from 1 to {self.max_page_size}."]}
            )
        return int(raw)

    def get_schema_operation_parameters(self, view):
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_query_param:
                parameter["schema"] = {"type": "integer", "minimum": 1}
            elif parameter["name"] == self.page_size_query_param:
                parameter["schema"] = {"type": "integer", "minimum": 1, "maximum": self.max_page_size}
        return parameters
