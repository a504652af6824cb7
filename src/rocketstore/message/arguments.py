"""Type checks at the edge of the embedded API: an argument of the wrong type is a TypeError naming it,
raised before anything is read or written (deep inside it would fail with an unrelated message, or worse,
a float offset would slice, a bool queue id would be queue 1).

Pure: no imports but the standard library.
"""

from __future__ import annotations

import operator

__all__ = ["int_argument", "str_argument"]


def int_argument(name: str, value: object) -> int:
    """*value* as the int argument *name*: an int, or what has ``__index__`` (a numpy integer); a bool (True
    == 1 to Python, but a flag where an offset or queue id goes is a mistake), float, str or None is a
    TypeError naming the argument."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an int, not a bool ({value!r})")
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"{name} must be an int, not {type(value).__name__} ({str(value)[:40]!r})") from None


def str_argument(name: str, value: object) -> str:
    """*value* as the str argument *name*; anything else is a TypeError naming it."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {type(value).__name__} ({str(value)[:40]!r})")
    return value
