"""Path parameters for the API: ids and numbers parsed without ever raising a 500.

Routes take ids as ``<str:...>`` so that a malformed id (``-1``, ``abc``, a 40-digit number) reaches
the view and gets the API's JSON 404 rather than Django's HTML one.
"""

from __future__ import annotations

from rest_framework.exceptions import NotFound

MAX_ID = 2**63 - 1  # PostgreSQL bigint


def positive_int_or_404(value, *, what: str = "object") -> int:
    """``value`` as an int in 1..2**63-1.

    Raises:
        rest_framework.exceptions.NotFound: for anything else ("No such <what>.").
    """
    text = str(value)
    if not text.isascii() or not text.isdigit() or len(text) > 19:
        raise NotFound(f"No such {what}.")
    number = int(text)
    if not 1 <= number <= MAX_ID:
        raise NotFound(f"No such {what}.")
    return number
