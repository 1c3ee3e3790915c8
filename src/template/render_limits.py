"""Bounds on one rendering, which Kluctl does not have: a project's templates are untrusted input in the controller
and the agent, where a template that loops for ever, or builds a number or a text of gigabytes, would hold a worker
(and every service queued behind it) for good.

- Time: an entry (a file or a string template) renders for at most its time limit (DEFAULT_TIME_LIMIT_SECONDS
  unless the request gives one). Python looks for the alarm between bytecodes, so every loop of a template stops.
- Arithmetic done in one C call, which no alarm interrupts: `**` and `*` refuse results of more than MAX_INT_BITS
  bits, and repeated texts and lists of more than MAX_REPEATED_ITEMS items.
- Memory: worker.py caps the worker's address space, so what still grows fails with MemoryError.
- Jinja2's sandbox itself caps `range()` at 100,000 items (jinja2.sandbox.MAX_RANGE).
"""

import contextlib
import signal

from jinja2.sandbox import SecurityError

DEFAULT_TIME_LIMIT_SECONDS = 60.0
MAX_INT_BITS = 1 << 16
MAX_REPEATED_ITEMS = 64 * 1024 * 1024
# Once the limit passed, the alarm comes back at this interval until the entry is over: code that catches every
# exception (a helper's `except Exception`) could swallow the first one.
_REPEAT_SECONDS = 0.05

_limit = None


class TimeLimitError(Exception):
    """An entry rendered for longer than its time limit."""


@contextlib.contextmanager
def time_limit(seconds):
    """Raises TimeLimitError inside the `with` body once it ran for `seconds` (a positive number). Main thread only
    (Python delivers signals there), which is where the worker renders."""
    global _limit
    signal.signal(signal.SIGALRM, _on_alarm)
    _limit = seconds
    signal.setitimer(signal.ITIMER_REAL, seconds, _REPEAT_SECONDS)
    try:
        yield
    finally:
        # Cleared first: an alarm already on its way is then ignored instead of raised outside the body.
        _limit = None
        signal.setitimer(signal.ITIMER_REAL, 0)


def _on_alarm(_signum, _frame):
    if _limit is not None:
        raise TimeLimitError(f"rendering took longer than its limit of {_limit:g} s; a template loops too long")


def check_binop(operator, left, right):
    """Raises SecurityError when `left <operator> right` would be a number of more than MAX_INT_BITS bits or a
    repeated text or list of more than MAX_REPEATED_ITEMS items; `operator` is Jinja2's ("*" or "**")."""
    if operator == "**" and _is_int(left) and _is_int(right) and abs(left) > 1 and right > 0:
        _check_bits(right * abs(left).bit_length(), operator)
    elif operator == "*" and _is_int(left) and _is_int(right):
        _check_bits(abs(left).bit_length() + abs(right).bit_length(), operator)
    elif operator == "*":
        sequence, times = (left, right) if _is_int(right) else (right, left)
        if _is_int(times) and isinstance(sequence, (str, bytes, list, tuple)) and len(sequence) * times > MAX_REPEATED_ITEMS:
            raise SecurityError(f"the result of * would have more than {MAX_REPEATED_ITEMS} items, Gantry's limit")


def _check_bits(bits, operator):
    if bits > MAX_INT_BITS:
        raise SecurityError(f"the result of {operator} would have more than {MAX_INT_BITS} bits, Gantry's limit")


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)
