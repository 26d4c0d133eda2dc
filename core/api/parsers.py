"""JSON parsing for the API that answers 400, never 500, to any body."""

from __future__ import annotations

from rest_framework import parsers
from rest_framework.exceptions import ParseError

from core.text_rules import lone_surrogate_path


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser, plus two answers of 400 instead of a 500:

    * a body nested too deeply for Python's recursion limit (e.g. 100,000 ``[``);
    * a string anywhere in the body (a value, a key, an unknown field's name) holding a lone surrogate
      such as ``"\\ud800"``, which is not a character and cannot be stored: refused here, once, for every
      endpoint and field.
    """

    def parse(self, stream, media_type=None, parser_context=None):
        """Parse ``stream`` as JSON; raises ``ParseError`` (400) for malformed or too deeply nested JSON,
        or for a lone surrogate in any string."""
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON parse error - the body is nested too deeply.") from None
        path = lone_surrogate_path(data)
        if path is not None:
            # The path is cut: a key holding the surrogate must not be echoed back in full either.
            shown = path.encode("utf-8", "backslashreplace").decode("utf-8")[:200]
            raise ParseError(
                f"JSON parse error - {shown} holds a lone surrogate (a \\uD800-\\uDFFF escape that is not "
                "half of a pair), which is not a character; send the text as valid Unicode."
            )
        return data
