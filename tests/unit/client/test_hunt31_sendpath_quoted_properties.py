"""A producer's usual send (tags only) writes its properties into the request frame from their JSON text kept
per tags (outgoing_message._quoted_properties + JsonRequestTemplate.encode_quoted): the frame must be the
bytes JsonRequestTemplate.encode writes for the same properties text, whatever the tags."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketstore.client.outgoing_message import (
    _QUOTED_PROPERTIES,
    _TAGGED_PROPERTIES,
    _UNTAGGED_PROPERTIES,
    _quoted_properties,
    new_uniq_key,
)
from rocketstore.remoting.templates import JsonRequestTemplate, _need_escapes

CASES = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

TAGS = st.none() | st.text(st.sampled_from('aT"\\%{}0\x00\x01\x02\x0b\x1f\x7f\x85\u00e9\u2028\u4e2d\U0001f600\ud800')
                           | st.characters(), max_size=10)


def _template(group: str = "g") -> JsonRequestTemplate:
    """The template our producer sends a plain message with (_ext_fields_v2's keys and order)."""
    ext = {"a": group, "b": "T", "c": "TBW102", "d": "4", "e": "1", "f": "0", "g": None, "h": "0", "i": None,
           "j": "0", "k": "false", "m": "false"}
    return JsonRequestTemplate(310, ext, ("g", "i"))


@CASES
@given(TAGS, st.sampled_from(["g", "g\u2028%", "\x7f{}"]), st.integers(-(2**31), 2**31 - 1))
def test_the_quoted_properties_frame_is_the_templates_frame(tags: str | None, group: str, opaque: int) -> None:
    uniq = new_uniq_key()
    text = (_TAGGED_PROPERTIES if tags else _UNTAGGED_PROPERTIES).format(tags, uniq)
    quoted = _quoted_properties(tags, uniq)
    template = _template(group)
    expected = template.encode(("1795924206868", text), b"body", opaque)
    if quoted is None:  # only properties fastjson escapes otherwise are left to the template
        assert _need_escapes((text,))
    else:
        assert template.encode_quoted(('"1795924206868"', quoted), b"body", opaque) == expected
    assert _quoted_properties(tags, uniq) == quoted  # the second time from the kept parts


def test_the_usual_tags_are_quoted_from_kept_parts() -> None:
    uniq = new_uniq_key()
    assert _quoted_properties("TagA", uniq) == ('"UNIQ_KEY\\u0001' + uniq + '\\u0002WAIT\\u0001true\\u0002TAGS'
                                                '\\u0001TagA"')
    assert _QUOTED_PROPERTIES["TagA"]
    assert _quoted_properties("Tag\u2028", uniq) is None and _QUOTED_PROPERTIES["Tag\u2028"] == ()
