"""Remote models: calling a registered endpoint over HTTP, signed, in batches, with its answers checked
(``calls.py``), and the rule for where an endpoint may be (``addresses.py``: no server-side request
forgery; every call connects only to an address it checked). Imports no Django model.
"""
