"""A person's own examples: the page and its filters."""
