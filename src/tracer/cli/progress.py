"""Live progress of a long trace on stderr: nodes recorded so far and the rate, read
from the trace being filled by a timer thread (`tracer.api.recording`), never by a
per-node hook, so the recording itself runs at full speed."""

from __future__ import annotations

import threading
import time

from ..api import recording

__all__ = ["Progress"]


class Progress:
    """A timer thread that reports every `interval` seconds while tracking runs.

    On a terminal it rewrites one line; otherwise (when forced on) it writes a line
    per report.  Use as a context manager around the `track` call.
    """

    def __init__(self, stream, enabled: bool, interval: float = 0.5):
        self.stream = stream
        self.enabled = enabled
        self.interval = interval
        self.terminal = bool(getattr(stream, "isatty", lambda: False)())
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._shown = False
        self._tracking = threading.current_thread()   # the thread whose track is shown

    def __enter__(self) -> "Progress":
        if self.enabled:
            self._thread = threading.Thread(target=self._run, name="tracer-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            if self._shown and self.terminal:
                self.stream.write("\r\x1b[K")  # leave the terminal line clean
                self.stream.flush()

    def _run(self) -> None:
        start = last_time = time.monotonic()
        last_nodes = 0
        while not self._stop.wait(self.interval):
            trace = recording(self._tracking)
            nodes = len(trace) if trace is not None else 0
            now = time.monotonic()
            rate = (nodes - last_nodes) / (now - last_time) if now > last_time else 0.0
            last_nodes, last_time = nodes, now
            text = (f"[tracer] {nodes:,} nodes recorded, {rate:,.0f} nodes/s, "
                    f"{now - start:.1f} s")
            self.stream.write(f"\r\x1b[K{text}" if self.terminal else text + "\n")
            self.stream.flush()
            self._shown = True
