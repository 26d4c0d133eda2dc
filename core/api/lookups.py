"""Path parameters for the API: ids and numbers parsed without ever raising a 500.

Routes take ids as ``<str:...>`` so that a malformed id (``-1``, ``abc``, a 40-digit number) reaches
the view and gets the API's JSON 404 rather than Django's HTML one.
"""

from __future__ import annotations

from rest_framework.exceptions import NotFound

from core.text_rules import ascii_id

MAX_ID = 2**63 - 1  # PostgreSQL bigint


def positive_int_or_404(value, *, what: str = "object") -> int:
    """``value`` as an int in 1..2**63-1.

    Raises:
        rest_framework.exceptions.NotFound: for anything else ("No such <what>.").
    """
    number = ascii_id(str(value), max_digits=19)
    if number is None or not 1 <= number <= MAX_ID:
        raise NotFound(f"No such {what}.")
    return number
