"""A compressed REGISTER_BROKER body is inflated with a bound: a small frame that inflates to hundreds of MB
(a zip bomb) is refused with the same SYSTEM_ERROR answer as any body that does not inflate, and the name
server goes on serving; a real broker's compressed table still registers.  Real name server, real
connection on 127.0.0.1 port 0."""

from __future__ import annotations

import zlib

import pytest
from local_cluster import run_within

from rocketstore.errors import ProtocolError
from rocketstore.namesrv import NameServer
from rocketstore.remoting.bodies import MAX_INFLATED_REGISTER_BYTES, DataVersion, RegisterBrokerBody, TopicConfig
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.headers import RegisterBrokerRequestHeader
from rocketstore.remoting.transport import ConnectionPool

#: ~200 KB on the wire, inflates to 4 bounds' worth of zeros
_BOMB = zlib.compress(bytes(4 * MAX_INFLATED_REGISTER_BYTES), 9)


def _register_request(payload: bytes, *, compressed: bool = True) -> RemotingCommand:
    header = RegisterBrokerRequestHeader(
        broker_name="broker-a", broker_addr="127.0.0.1:10911", cluster_name="DefaultCluster",
        ha_server_addr="127.0.0.1:10912", broker_id=0, compressed=compressed,
        body_crc32=zlib.crc32(payload) & 0x7FFFFFFF)
    return RemotingCommand.request(RequestCode.REGISTER_BROKER, header.to_ext_fields(), payload)


@pytest.mark.parametrize("decode", ["decode", "decode_without_topics"])
def test_a_zip_bomb_register_body_is_refused_without_inflating_it_whole(decode: str) -> None:
    assert len(_BOMB) < 1024 * 1024
    with pytest.raises(ProtocolError, match="inflates past"):
        getattr(RegisterBrokerBody, decode)(_BOMB, compressed=True)


def test_compressed_bodies_that_do_not_inflate_are_still_protocol_errors() -> None:
    whole = RegisterBrokerBody({"T": TopicConfig("T", 4, 4)}, DataVersion(1, 2)).encode_compressed()
    for bad in (whole[:-3], b"not deflate"):
        for decode in (RegisterBrokerBody.decode, RegisterBrokerBody.decode_without_topics):
            with pytest.raises(ProtocolError, match="does not inflate"):
                decode(bad, compressed=True)
    # bytes after the deflate stream's end are ignored (zlib.decompress and Java's InflaterInputStream)
    assert RegisterBrokerBody.decode(whole + b"xx", compressed=True).topic_configs["T"].write_queue_nums == 4


def test_the_name_server_answers_a_zip_bomb_registration_with_system_error_and_goes_on() -> None:
    async def go() -> None:
        namesrv = NameServer()
        await namesrv.start("127.0.0.1", 0)
        pool = ConnectionPool()
        try:
            connection = await pool.get(namesrv.address)
            response = await connection.request(_register_request(_BOMB), 20.0)
            assert response.code == ResponseCode.SYSTEM_ERROR
            assert "inflates past" in (response.remark or "")
            assert namesrv.routes.topics() == []
            # the same connection and name server take a real compressed table right after
            configs = {f"Big{i}": TopicConfig(f"Big{i}", 4, 4, 6) for i in range(500)}
            body = RegisterBrokerBody(configs, DataVersion(1, 1)).encode_compressed()
            response = await connection.request(_register_request(body), 20.0)
            assert response.code == ResponseCode.SUCCESS, response.remark
            assert namesrv.routes.topics() == sorted(configs)
        finally:
            await pool.close()
            await namesrv.close()

    run_within(go, 60)
