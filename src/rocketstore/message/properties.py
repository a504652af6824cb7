"""The message properties string: ``name 0x01 value 0x02 name 0x01 value``.

Owns the property names RocketMQ uses, the parser (Java's rules: a pair needs a non-empty name and a
non-empty value; later duplicates win; a trailing separator is harmless) and the writer.  The writer emits
pairs in the iteration order of a Java ``HashMap`` holding the same keys, because the real broker serialises
its ``HashMap`` and byte-compatibility of the commitlog depends on that order.

Imports only :mod:`rocketstore.message.hashing`.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from itertools import chain
from typing import Protocol

from rocketstore.message.hashing import java_string_hash

__all__ = [
    "NAME_VALUE_SEPARATOR",
    "PROPERTY_FORMATS",
    "PROPERTY_SEPARATOR",
    "HasTagsAndKeys",
    "PeakProperties",
    "SentProperties",
    "PropertiesFormat",
    "PropertyName",
    "encode_properties",
    "encode_properties_column",
    "java_hashmap_order",
    "parse_properties",
    "parse_properties_raw",
    "properties_format",
    "properties_problem",
    "waits_store_msg_ok",
]

NAME_VALUE_SEPARATOR = "\x01"
PROPERTY_SEPARATOR = "\x02"


class PropertyName:
    """RocketMQ's well-known property names (``MessageConst``)."""

    TAGS = "TAGS"
    KEYS = "KEYS"
    UNIQ_KEY = "UNIQ_KEY"
    WAIT = "WAIT"
    DELAY = "DELAY"
    RETRY_TOPIC = "RETRY_TOPIC"
    REAL_TOPIC = "REAL_TOPIC"
    REAL_QID = "REAL_QID"
    TRAN_MSG = "TRAN_MSG"
    PGROUP = "PGROUP"
    MIN_OFFSET = "MIN_OFFSET"
    MAX_OFFSET = "MAX_OFFSET"
    ORIGIN_MESSAGE_ID = "ORIGIN_MESSAGE_ID"
    RECONSUME_TIME = "RECONSUME_TIME"
    MAX_RECONSUME_TIMES = "MAX_RECONSUME_TIMES"
    CLUSTER = "CLUSTER"
    MSG_REGION = "MSG_REGION"
    TRACE_ON = "TRACE_ON"
    TRAN_PREPARED_QUEUE_OFFSET = "TRAN_PREPARED_QUEUE_OFFSET"
    TRANSACTION_CHECK_TIMES = "TRANSACTION_CHECK_TIMES"
    CHECK_IMMUNITY_TIME_IN_SECONDS = "CHECK_IMMUNITY_TIME_IN_SECONDS"
    CORRELATION_ID = "CORRELATION_ID"
    REPLY_TO_CLIENT = "REPLY_TO_CLIENT"
    TTL = "TTL"
    MSG_TYPE = "MSG_TYPE"
    PUSH_REPLY_TIME = "PUSH_REPLY_TIME"
    ARRIVE_TIME = "ARRIVE_TIME"
    KEY_SEPARATOR = " "


def waits_store_msg_ok(properties: Mapping[str, str]) -> bool:
    """Message.isWaitStoreMsgOK: no WAIT property is true, else Boolean.parseBoolean of it ("TRUE" is true,
    "yes" or "1" false)."""
    wait = properties.get(PropertyName.WAIT)
    return wait is None or wait.lower() == "true"


def properties_problem(properties: Mapping[str, str | None]) -> str | None:
    """Why *properties* would not reach a consumer as given, or None: a pair with an empty name or value
    (string2messageProperties drops it on the broker, and Java's putUserProperty refuses it), a name
    holding NAME_VALUE_SEPARATOR, or a name or value holding PROPERTY_SEPARATOR (the broker cuts there and
    stores other pairs than were sent; 4.9.3 does so silently).  A value may hold NAME_VALUE_SEPARATOR: the
    parser cuts a pair at its first one only.  None values are skipped, as the writer skips them."""
    for name, value in properties.items():
        if value is None:
            continue
        if not name or not value:
            return f"The name or value of property can not be empty: {name!r}={value!r}"
        if NAME_VALUE_SEPARATOR in name or PROPERTY_SEPARATOR in name or PROPERTY_SEPARATOR in value:
            return (f"The property {name!r}={value!r} holds a separator of the properties string (\\u0001 in "
                    "its name, or \\u0002): the broker would store other properties than these")
    return None


def parse_properties(text: str) -> dict[str, str]:
    """Parse as Java's ``string2messageProperties`` does: pairs with an empty name or value vanish."""
    result: dict[str, str] = {}
    if not text:
        return result
    for item in text.split(PROPERTY_SEPARATOR):
        sep = item.find(NAME_VALUE_SEPARATOR)
        if sep > 0 and sep < len(item) - 1:
            result[item[:sep]] = item[sep + 1 :]
    return result


def parse_properties_raw(text: str) -> dict[str, str]:
    """Parse keeping pairs with empty values (what the writer put), in their written order."""
    result: dict[str, str] = {}
    if not text:
        return result
    for item in text.split(PROPERTY_SEPARATOR):
        sep = item.find(NAME_VALUE_SEPARATOR)
        if sep > 0:
            result[item[:sep]] = item[sep + 1 :]
    return result


def _spread(name: str) -> int:
    h = java_string_hash(name) & 0xFFFFFFFF
    return h ^ (h >> 16)


#: names (or names and peak) -> order
_ORDER_CACHE: dict[object, tuple[int, ...]] = {}
_ORDER_CACHE_MAX = 4096


def _table_size(entries: int) -> int:
    """Buckets of a default Java HashMap that has held *entries* at once: 16, doubled each time its size
    passes 3/4 of the table (and never shrunk)."""
    table = 16
    while entries > table * 3 // 4:
        table *= 2
    return table


def java_hashmap_order(names: tuple[str, ...], peak: int = 0) -> tuple[int, ...]:
    """Positions of *names* (distinct, in insertion order) in a Java ``HashMap``'s iteration order; *peak*
    is the most entries the map ever held, when it held more than it does now (a table never shrinks).

    A default HashMap starts with 16 buckets and doubles when its size passes 3/4 of the table.  Resizing
    splits each bucket keeping relative order, so iteration is by bucket index in the final table and,
    within a bucket, by insertion order.  (Treeified bins need 8 colliding keys in a table of 64 or more;
    properties never get there.)
    """
    key = names if peak <= len(names) else (names, peak)
    cached = _ORDER_CACHE.get(key)
    if cached is not None:
        return cached
    mask = _table_size(max(len(names), peak)) - 1
    order = tuple(sorted(range(len(names)), key=lambda i: (_spread(names[i]) & mask, i)))
    if len(_ORDER_CACHE) >= _ORDER_CACHE_MAX:
        _ORDER_CACHE.clear()
    _ORDER_CACHE[key] = order
    return order


class PeakProperties(dict[str, str]):
    """A properties map that once held *peak* entries, more than it holds now: the map Java serialises
    then iterates in the bigger table that held them all.  The broker's send path makes one where it drops
    WAIT after adding CLUSTER, as 4.9.3 does; anything else is a plain dict."""

    __slots__ = ("peak",)

    def __init__(self, properties: Mapping[str, str], peak: int) -> None:
        super().__init__(properties)
        self.peak = peak

    @staticmethod
    def after_removal(properties: dict[str, str], peak: int) -> dict[str, str]:
        """*properties*, as a PeakProperties when its table with *peak* entries is bigger than now."""
        if _table_size(peak) > _table_size(len(properties)):
            return PeakProperties(properties, peak)
        return properties


class SentProperties(dict[str, str]):
    """A properties map parsed from *text*, stored as that text unchanged (its order, a trailing separator,
    a name given twice): 4.9.3's reply processor writes the properties string of the request as it came
    instead of serialising the map again, as a plain send does."""

    __slots__ = ("text",)

    def __init__(self, properties: Mapping[str, str], text: str) -> None:
        super().__init__(properties)
        self.text = text


#: names in insertion order -> (a %-format with the names in Java HashMap order and a ``%s`` per value,
#: an itemgetter of the values in that order, whether no name holds a separator), or None for names the
#: format cannot hold.  The writer's hot path: one C-level format instead of a Python-level join of pairs.
PropertiesFormat = tuple[str, Callable[[Mapping[str, str | None]], tuple[str | None, ...]], bool]
_FORMATS: dict[tuple[str, ...], PropertiesFormat | None] = {}
#: ``PROPERTY_FORMATS.get(names)``: the cached format of these names, None if not cached (or unusable);
#: the put path looks here first and calls :func:`properties_format` only on a miss.
PROPERTY_FORMATS: Mapping[tuple[str, ...], PropertiesFormat | None] = _FORMATS


def properties_format(names: tuple[str, ...]) -> PropertiesFormat | None:
    """The (format, value getter, names free of separators) of a properties map with these *names*
    (distinct, in insertion order), cached; None when a name is not a str.

    ``fmt % getter(properties)`` is :func:`encode_properties` of a map whose values are all str.  With the
    third item True, the string says what the map says (``parse_properties_raw`` gives it back) exactly
    when no value holds NAME_VALUE_SEPARATOR or PROPERTY_SEPARATOR."""
    shape = _FORMATS.get(names, False)
    if shape is not False:
        return shape  # type: ignore[return-value]
    if all(type(name) is str for name in names):
        ordered = [names[i] for i in java_hashmap_order(names)]
        fmt = PROPERTY_SEPARATOR.join(name.replace("%", "%%") + NAME_VALUE_SEPARATOR + "%s" for name in ordered)
        clean = not any(NAME_VALUE_SEPARATOR in name or PROPERTY_SEPARATOR in name for name in names)
        if len(ordered) == 1:
            # an itemgetter of one name returns the bare value: ask for it twice and print the copy empty
            shape = (fmt + "%.0s", operator.itemgetter(ordered[0], ordered[0]), clean)
        else:
            shape = (fmt, operator.itemgetter(*ordered), clean)
    else:
        shape = None
    if len(_FORMATS) >= _ORDER_CACHE_MAX:
        _FORMATS.clear()
    _FORMATS[names] = shape
    return shape


def encode_properties(properties: Mapping[str, str | None]) -> str:
    """Serialise as the Java broker does: Java HashMap order, no trailing separator, None values skipped.

    TypeError when a name or value is neither a str nor (a value) None."""
    if not properties:
        return ""
    cls = properties.__class__
    if cls is SentProperties:
        return properties.text  # type: ignore[attr-defined]
    names = tuple(properties)
    peak = properties.peak if cls is PeakProperties else 0  # type: ignore[attr-defined]
    shape = None if peak else (_FORMATS.get(names) or properties_format(names))
    if shape is not None:
        fmt, values_of, _ = shape
        values = values_of(properties)
        try:
            "".join(values)  # type: ignore[arg-type]  # every value a str (a None is skipped below; "%s" would print anything)
        except TypeError:
            pass
        else:
            return fmt % values
    items = list(properties.items())
    order = java_hashmap_order(names, peak)
    try:
        return PROPERTY_SEPARATOR.join([items[i][0] + NAME_VALUE_SEPARATOR + items[i][1] for i in order])  # type: ignore[operator]
    except TypeError:  # a None value: skipped, as Java skips null values
        return PROPERTY_SEPARATOR.join([items[i][0] + NAME_VALUE_SEPARATOR + items[i][1]  # type: ignore[operator]
                                        for i in order if items[i][1] is not None])


#: names -> whether their Java HashMap order is independent of insertion order (no two share a bucket)
_ORDER_FREE: dict[tuple[str, ...], bool] = {}


def _order_free(names: tuple[str, ...]) -> bool:
    """True when no two of *names* share a bucket of the HashMap that holds them: then every insertion
    order of these names iterates alike, so one cached format serves every map holding them."""
    free = _ORDER_FREE.get(names)
    if free is None:
        table = 16
        while len(names) > table * 3 // 4:
            table *= 2
        free = len({_spread(name) & (table - 1) for name in names}) == len(names)
        if len(_ORDER_FREE) >= _ORDER_CACHE_MAX:
            _ORDER_FREE.clear()
        _ORDER_FREE[names] = free
    return free


def encode_properties_column(maps: Sequence[Mapping[str, str | None]]) -> list[bytes] | None:
    """``encode_properties(m).encode()`` for each of *maps* when they all hold the first one's names with
    str values (a producer's batch) and those names' Java HashMap order does not depend on insertion order;
    None for anything else, which the caller encodes map by map.

    One %-format of the whole column instead of one per map: the cached format repeated with a 0x00
    between copies, filled once and split once (refused when a value holds a 0x00 itself).  The same
    number of names, every one found, is the same set of names."""
    n = len(maps)
    if not n:
        return []
    first = maps[0]
    count = len(first)
    if list(map(len, maps)).count(count) != n:
        return None
    if not count:
        return [b""] * n
    names = tuple(first)
    if not _order_free(names):
        return None
    shape = _FORMATS.get(names) or properties_format(names)
    if shape is None:
        return None
    fmt, values_of, _ = shape
    try:
        values = tuple(chain.from_iterable(map(values_of, maps)))
        "".join(values)  # type: ignore[arg-type]  # every value a str (a None is skipped by encode_properties)
    except (KeyError, TypeError):
        return None
    text = "\x00".join([fmt] * n) % values
    if text.count("\x00") != n - 1:
        return None
    return text.encode("utf-8").split(b"\x00")


class _WithProperties(Protocol):
    @property
    def properties(self) -> Mapping[str, str]: ...


class HasTagsAndKeys:
    """``tags`` and ``keys`` read from the ``properties`` of the message class it is mixed into (the
    store's Message and StoredMessage, the clients' consumed and transactional messages)."""

    __slots__ = ()

    @property
    def tags(self: _WithProperties) -> str | None:
        return self.properties.get(PropertyName.TAGS)

    @property
    def keys(self: _WithProperties) -> str | None:
        return self.properties.get(PropertyName.KEYS)
