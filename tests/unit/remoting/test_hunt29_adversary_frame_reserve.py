"""A frame's length word alone must not make a connection's decoder reserve the whole frame.

Found by hammering a broker with idle connections: 8 bytes (a length word declaring a frame just under
2 MiB and a header-length word) on each of 500 connections took the broker from 55 MB to 1.1 GB resident,
as every decoder grew its buffer to the declared frame as soon as the length arrived.  4.9.3's Netty decoder
grows its buffer with the bytes that arrive (at most 64 KiB a read), so the same bytes cost it nothing.
"""

from __future__ import annotations

import struct
import tracemalloc

from rocketstore.remoting import RemotingCommand, encode_command
from rocketstore.remoting.frame_decoder import _RETAINED_BUFFER_BYTES, FrameDecoder


def _declare(decoder: FrameDecoder, frame_bytes: int) -> None:
    decoder.feed(struct.pack(">ii", frame_bytes - 4, 16))  # the length word and a header length, no more


def test_a_declared_frame_under_the_retained_size_does_not_reserve_its_length() -> None:
    decoder = FrameDecoder()
    _declare(decoder, _RETAINED_BUFFER_BYTES - 100)

    with decoder.writable_buffer() as view:
        assert len(view) <= 128 << 10
    assert decoder.next_command() is None


def test_many_decoders_given_only_a_length_hold_little() -> None:
    tracemalloc.start()
    try:
        decoders = [FrameDecoder() for _ in range(20)]
        for decoder in decoders:
            _declare(decoder, _RETAINED_BUFFER_BYTES - 100)
            decoder.writable_buffer().release()
        held_bytes, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert held_bytes < 20 * (256 << 10)  # was 20 x 2 MiB


def _receive(decoder: FrameDecoder, data: bytes, most: int) -> int:
    """*data* as a transport delivers it, at most *most* bytes a read; the number of reads."""
    reads = 0
    while data:
        with decoder.writable_buffer() as view:
            size = min(len(view), len(data), most)
            view[:size] = data[:size]
        decoder.wrote(size)
        data = data[size:]
        reads += 1
    return reads


def test_frames_bigger_than_the_reservation_still_arrive_whole() -> None:
    decoder = FrameDecoder()
    for body_bytes in (65_000, 300_000, _RETAINED_BUFFER_BYTES - 1000, 3 << 20, 1):
        command = RemotingCommand.response(0, 7, body=b"p" * body_bytes)
        frame = encode_command(command)
        reads = _receive(decoder, frame, most=1 << 30)
        assert decoder.next_command() == command
        assert decoder.next_command() is None
        assert reads <= 12  # the buffer doubles: a few reads, not one per 16 KiB
