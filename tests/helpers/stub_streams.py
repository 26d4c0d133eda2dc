"""A stand-in for ``serving.chat_stream``'s answer in tests that script what models say: read as the
arena reads answers (``serving.Together``: iterated for pieces, closed, its ``generation`` taken once
it has ended), or drained."""

from __future__ import annotations


class StubStream:
    """One piece, the text of ``self.answer()`` (a ``Generation``, made when the stream is first read),
    then the end, with ``generation`` set. A subclass defines ``answer``."""

    generation = None

    def answer(self):  # pragma: no cover - every subclass has its own
        raise NotImplementedError

    def __iter__(self):
        return self

    def __next__(self) -> str:
        if self.generation is not None:
            raise StopIteration
        self.generation = self.answer()
        return self.generation.text

    def close(self) -> None:
        pass

    def drain(self):
        for _ in self:
            pass
        return self.generation
