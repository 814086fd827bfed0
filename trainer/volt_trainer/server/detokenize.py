"""Incremental detokenisation with stop strings: emits only text that can no longer change or be cut."""

from __future__ import annotations

from functools import lru_cache

from transformers.convert_slow_tokenizer import bytes_to_unicode


class IncrementalText:
    """Tracks one sequence's generated ids and the text already emitted.

    Text is the decode of all generated ids (special tokens skipped), so the concatenated deltas equal
    ``tokenizer.decode(token_ids, skip_special_tokens=True)`` unless a stop string truncated it.
    """

    def __init__(self, tokenizer, stop: tuple[str, ...]) -> None:
        self._tokenizer = tokenizer
        self._stop = tuple(s for s in stop if s)
        self._ids: list[int] = []
        self._emitted = 0
        self.stopped = False
        self.stop_string: str | None = None  # which stop string ended the text (vLLM's stop_reason)

    def add(self, token_id: int) -> str:
        """Append a token; return the newly safe text. Sets ``stopped`` when a stop string appeared."""
        self._ids.append(token_id)
        text = self._tokenizer.decode(self._ids, skip_special_tokens=True)
        for stop in self._stop:
            index = text.find(stop, max(0, self._emitted - len(stop)))
            if index != -1:
                self.stopped = True
                self.stop_string = stop
                text = text[:index]
        if self.stopped:
            return self._take(text, len(text))
        safe = len(text)
        if text.endswith("\ufffd"):
            safe = len(text.rstrip("\ufffd"))  # incomplete UTF-8 sequence: wait for its next byte
        for stop in self._stop:
            for k in range(min(len(stop) - 1, safe), 0, -1):
                if text[safe - k : safe] == stop[:k]:
                    safe -= k  # might be the start of a stop string
                    break
        return self._take(text, safe)

    def flush(self) -> str:
        """Text still held back, at the end of the sequence."""
        if self.stopped:
            return ""
        return self._take(self._tokenizer.decode(self._ids, skip_special_tokens=True), None)

    def _take(self, text: str, end: int | None) -> str:
        end = len(text) if end is None else end
        if end <= self._emitted:
            return ""
        delta = text[self._emitted : end]
        self._emitted = end
        return delta


@lru_cache(maxsize=1)
def _byte_decoder() -> dict[str, int]:
    return {char: byte for byte, char in bytes_to_unicode().items()}


def token_bytes(tokenizer, token_id: int) -> list[int]:
    """Raw UTF-8 bytes of one byte-level BPE token (a token may hold part of a character)."""
    piece = tokenizer.convert_ids_to_tokens(token_id)
    decoder = _byte_decoder()
    if piece is not None and all(ch in decoder for ch in piece):
        return [decoder[ch] for ch in piece]
    return list(tokenizer.decode([token_id]).encode("utf-8"))
