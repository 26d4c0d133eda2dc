"""A round's quality for its owners: the page, its API and the reads behind its links."""
