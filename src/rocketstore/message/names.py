"""The rule for topic and group names RocketMQ 4.9.3 applies: the characters ``^[%|a-zA-Z0-9_-]+$``, a topic
of at most 127 characters and a group of at most 255 (Validators / TopicValidator).  One definition for the
broker, which checks every name a request carries at the edge, and the clients, which check before they
send.  The charset leaves out '.', '/' and '\\', so a valid name can never climb out of consumequeue/ or
break a ``topic@group`` offset key.

No I/O; safe from any thread.
"""

from __future__ import annotations

__all__ = ["GROUP_MAX_LENGTH", "NAME_CHARS", "TOPIC_MAX_LENGTH", "group_problem"]

#: every character a topic or group name may hold
NAME_CHARS = frozenset("%|abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
#: TopicValidator.TOPIC_MAX_LENGTH
TOPIC_MAX_LENGTH = 127
#: Validators.CHARACTER_MAX_LENGTH, the limit on group names
GROUP_MAX_LENGTH = 255


def group_problem(group: str | None) -> str | None:
    """Why *group* is not a group name (Validators.checkGroup: its order of checks and its wording), or None."""
    if not group or not group.strip():
        return "the specified group is blank"
    if len(group) > GROUP_MAX_LENGTH:
        return f"the specified group is longer than group max length {GROUP_MAX_LENGTH}."
    if not NAME_CHARS.issuperset(group):
        return f"the specified group[{group}] contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
    return None
