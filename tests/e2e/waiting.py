"""Polling with a deadline, shared by the e2e tests."""

import time


def wait_until(check, timeout_s: float, what: str, interval_s: float = 0.2) -> None:
    """Returns once `check()` is true; fails the test after `timeout_s` seconds."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(interval_s)
    raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")
