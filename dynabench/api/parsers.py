"""JSON parsing for the API that answers 400, never 500, to any body."""

from rest_framework import parsers
from rest_framework.exceptions import ParseError


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser, plus: a body nested too deeply for Python's recursion limit (e.g. 100,000
    ``[``) is a 400 "JSON parse error" instead of an uncaught ``RecursionError``."""

    def parse(self, stream, media_type=None, parser_context=None):
        """Parse ``stream`` as JSON; raises ``ParseError`` (400) for malformed or too deeply nested JSON."""
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON parse error - the body is nested too deeply.") from None
