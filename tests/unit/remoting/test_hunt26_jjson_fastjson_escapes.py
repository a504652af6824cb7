"""JSON text as 4.9.3's fastjson 1.2.48 writes it: the string escapes of headers, bodies and config files.

json (ensure_ascii=False) wrote DEL, U+0080-U+009F, U+2028 and U+2029 raw and the other control characters
as ``\\u001f`` (lower-case hex); fastjson writes ``\\u007F``, ``\\u0085``, ``\\u2028``, ``\\u001F``.  Every
expected text below was captured from 4.9.3 (JSON.toJSONString, RemotingSerializable.encode of a
RemotingCommand, TopicConfigSerializeWrapper.toJson(true/false), ConsumerOffsetManager.encode(true)).
"""

from __future__ import annotations

import os

import pytest

from rocketstore.broker.config_files import write_json_atomically
from rocketstore.remoting import fastjson
from rocketstore.remoting.codec import _encode_json_header_reference, encode_command
from rocketstore.remoting.codes import LanguageCode, SerializeType
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.templates import JsonRequestTemplate, JsonResponseTemplate

# JSON.toJSONString(String.valueOf(c)) for each character 4.9.3 escapes (captured); every other character of
# U+0000-U+00A0 it writes as itself.
_JAVA_ESCAPED = {c: "\\u%04X" % c for c in [*range(0x20), *range(0x7F, 0xA0), 0x2028, 0x2029]}
_JAVA_ESCAPED.update({0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0C: "\\f", 0x0D: "\\r", 0x22: '\\"', 0x5C: "\\\\"})

# a"b\c/d<e>f&g'h DEL U+2028 U+001F U+0000 (lone surrogate U+D800) a
MIX = "a\"b\\c/d<e>f&g'h\x7f\u2028\x1f\x00\ud800a"
# captured from 4.9.3: RemotingSerializable.encode(RemotingCommand.createResponseCommand(0, MIX)) with opaque 7,
# extFields {"v": MIX} (version 0: no rocketmq.remoting.version property in the driver)
JAVA_HEADER = (b'{"code":0,"extFields":{"v":"a\\"b\\\\c/d<e>f&g\'h\\u007F\\u2028\\u001F\\u0000?a"},"flag":1,'
               b'"language":"JAVA","opaque":7,"remark":"a\\"b\\\\c/d<e>f&g\'h\\u007F\\u2028\\u001F\\u0000?a",'
               b'"serializeTypeCurrentRPC":"JSON","version":0}')
# captured: TopicConfigSerializeWrapper with one TopicConfig(MIX, 4, 4, 6), dataVersion timestamp 1234
JAVA_TOPICS_COMPACT = (b'{"dataVersion":{"counter":0,"timestamp":1234},"topicConfigTable":{"a\\"b\\\\c/d<e>f&g\'h'
                       b'\\u007F\\u2028\\u001F\\u0000?a":{"order":false,"perm":6,"readQueueNums":4,'
                       b'"topicFilterType":"SINGLE_TAG","topicName":"a\\"b\\\\c/d<e>f&g\'h\\u007F\\u2028\\u001F'
                       b'\\u0000?a","topicSysFlag":0,"writeQueueNums":4}}}')
JAVA_TOPICS_PRETTY = (b'{\n\t"dataVersion":{\n\t\t"counter":0,\n\t\t"timestamp":1234\n\t},\n\t"topicConfigTable":{\n'
                      b'\t\t"a\\"b\\\\c/d<e>f&g\'h\\u007F\\u2028\\u001F\\u0000?a":{\n\t\t\t"order":false,\n'
                      b'\t\t\t"perm":6,\n\t\t\t"readQueueNums":4,\n\t\t\t"topicFilterType":"SINGLE_TAG",\n'
                      b'\t\t\t"topicName":"a\\"b\\\\c/d<e>f&g\'h\\u007F\\u2028\\u001F\\u0000?a",\n'
                      b'\t\t\t"topicSysFlag":0,\n\t\t\t"writeQueueNums":4\n\t\t}\n\t}\n}')
# captured: ConsumerOffsetManager.encode(true) after commits (T\u2028, G\u007fx) queues 0, 1 and (t, g) queue 3
JAVA_OFFSETS_PRETTY = (b'{\n\t"offsetTable":{\n\t\t"T\\u2028@G\\u007Fx":{0:12,1:34\n\t\t},\n\t\t"t@g":{3:5\n\t\t}\n'
                       b'\t}\n}')


def _topics(name: str) -> dict:
    return {"dataVersion": {"counter": 0, "timestamp": 1234},
            "topicConfigTable": {name: {"order": False, "perm": 6, "readQueueNums": 4,
                                        "topicFilterType": "SINGLE_TAG", "topicName": name, "topicSysFlag": 0,
                                        "writeQueueNums": 4}}}


@pytest.mark.parametrize("code", [*range(0xA1), 0x2028, 0x2029, 0x2027, 0x202A, 0xFEFF, 0xFFFD])
def test_each_character_is_written_as_fastjson_writes_it(code):
    expected = '"' + _JAVA_ESCAPED.get(code, chr(code)) + '"'
    assert fastjson.dumps(chr(code)) == expected.encode("utf-8")
    assert fastjson.dumps({"k": chr(code)}) == b'{"k":' + expected.encode("utf-8") + b"}"
    assert fastjson.dumps_pretty({"k": chr(code)}) == '{\n\t"k":' + expected + "\n}"


def test_escaped_backslash_before_u_is_left_alone():
    # a literal backslash, then u001f: not an escape to upper-case
    assert fastjson.dumps("\\u001f\x7f") == b'"\\\\u001f\\u007F"'


def test_header_of_a_response_is_fastjsons():
    cmd = RemotingCommand(code=0, language=LanguageCode.JAVA, version=0, opaque=7, flag=1, remark=MIX,
                          ext_fields={"v": MIX}, body=b"", serialize_type=SerializeType.JSON)
    frame = encode_command(cmd)
    assert frame[8:] == JAVA_HEADER
    assert _encode_json_header_reference(cmd, 7) == JAVA_HEADER


def test_templates_escape_as_the_encoder():
    response = JsonResponseTemplate(("v",), {"MSG_REGION": "r\x7f"})
    cmd = RemotingCommand.response(0, 7, ext_fields={"v": MIX, "MSG_REGION": "r\x7f"})
    assert response.encode(0, 7, (MIX,)) == encode_command(cmd)
    assert b"\\u007F\\u2028\\u001F" in response.encode(0, 7, (MIX,))
    request = JsonRequestTemplate(10, {"a": "g\u2029", "b": None, "c": "x"}, ("c",))
    encoded = request.encode((MIX,), b"body", 9)
    assert b'"a":"g\\u2029"' in encoded and b'"c":"a\\"b\\\\c/d<e>f&g\'h\\u007F\\u2028\\u001F\\u0000?a"' in encoded


def test_topic_config_wrapper_compact_and_pretty():
    assert fastjson.dumps(_topics(MIX)) == JAVA_TOPICS_COMPACT
    assert fastjson.dumps_pretty(_topics(MIX)).encode("utf-8", "replace") == JAVA_TOPICS_PRETTY


def test_config_files_are_written_as_4_9_3_writes_them(tmp_path):
    path = os.path.join(tmp_path, "topics.json")
    write_json_atomically(path, _topics(MIX))
    with open(path, "rb") as fh:
        assert fh.read() == JAVA_TOPICS_PRETTY
    offsets = {"offsetTable": {"T\u2028@G\x7fx": {0: 12, 1: 34}, "t@g": {3: 5}}}
    assert fastjson.dumps_pretty(offsets).encode("utf-8") == JAVA_OFFSETS_PRETTY
    # the file keeps its queue ids quoted (strict JSON, which 4.9.3 reads too): fastjson's layout of string keys
    path = os.path.join(tmp_path, "consumerOffset.json")
    write_json_atomically(path, offsets)
    with open(path, "rb") as fh:
        assert fh.read() == (b'{\n\t"offsetTable":{\n\t\t"T\\u2028@G\\u007Fx":{\n\t\t\t"0":12,\n\t\t\t"1":34\n\t\t},\n'
                             b'\t\t"t@g":{\n\t\t\t"3":5\n\t\t}\n\t}\n}')


def test_null_map_values_are_left_out_and_empty_containers_kept():
    # captured: JSON.toJSONString(map, false/true) of {"nul": null, "emap": {}, "elist": [], "listnull": [null, 1, "a"]}
    value = {"nul": None, "emap": {}, "elist": [], "listnull": [None, 1, "a"]}
    assert fastjson.dumps(value) == b'{"emap":{},"elist":[],"listnull":[null,1,"a"]}'
    assert fastjson.dumps_pretty(value) == '{\n\t"emap":{},\n\t"elist":[],\n\t"listnull":[\n\t\tnull,\n\t\t1,\n\t\t"a"\n\t]\n}'
    # captured: {"emap":{}, "elist":[], "nested":{"a":[]}, "lst":[1,2,{"x":1}]} pretty
    nested = {"emap": {}, "elist": [], "nested": {"a": []}, "lst": [1, 2, {"x": 1}]}
    assert fastjson.dumps_pretty(nested) == ('{\n\t"emap":{},\n\t"elist":[],\n\t"nested":{\n\t\t"a":[]\n\t},\n'
                                             '\t"lst":[\n\t\t1,\n\t\t2,\n\t\t{\n\t\t\t"x":1\n\t\t}\n\t]\n}')
