"""Tool output cut to a byte cap: head and tail kept, with a marker saying how much was elided."""

from __future__ import annotations

__all__ = ["CappedOutput", "cap_output"]


def cap_output(data: bytes, cap: int) -> str:
    """Decode output as UTF-8 (bad bytes replaced), keeping head and tail within `cap` bytes plus a marker."""
    if len(data) <= cap:
        return data.decode("utf-8", errors="replace")
    head = cap // 2
    tail = cap - head
    elided = len(data) - head - tail
    return (
        data[:head].decode("utf-8", errors="replace")
        + _marker(elided, cap)
        + data[len(data) - tail :].decode("utf-8", errors="replace")
    )


class CappedOutput:
    """Collects a command's output, keeping the first and last `cap` bytes and counting the total."""

    def __init__(self, cap: int) -> None:
        self._cap = cap
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        """Count `chunk` and keep what falls in the head or the (sliding) tail."""
        self.total += len(chunk)
        room = self._cap - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > self._cap:
                del self.tail[: len(self.tail) - self._cap]

    def text(self) -> str:
        """The output as `cap_output` would show it, with the true elided count."""
        kept = len(self.head) + len(self.tail)
        if self.total <= kept:
            return cap_output(bytes(self.head + self.tail), self._cap)
        # Some middle bytes were never stored: rebuild head + tail with the true elided count.
        head_part = bytes(self.head[: self._cap // 2])
        tail_part = bytes(self.tail[len(self.tail) - (self._cap - self._cap // 2) :])
        elided = self.total - len(head_part) - len(tail_part)
        return (
            head_part.decode("utf-8", "replace")
            + _marker(elided, self._cap)
            + tail_part.decode("utf-8", "replace")
        )


def _marker(elided: int, cap: int) -> str:
    return f"\n[... {elided} bytes elided: output exceeded the {cap}-byte cap ...]\n"
