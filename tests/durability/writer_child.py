"""Child process for the kill -9 tests: writes messages and prints each acknowledged one.

Usage: python writer_child.py STORE_DIR SEED FLUSH_TYPE SEGMENT_BYTES
Each acknowledged put prints one line: ``ack <topic> <queue_id> <queue_offset> <commit_log_offset> <key>``.
Batches print one line per message.  Runs until killed.
"""

from __future__ import annotations

import random
import sys

from rocketstore import Message, MessageStore, StoreConfig


def main() -> None:
    store_dir, seed, flush_type, segment_bytes = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    rng = random.Random(seed)
    config = StoreConfig(mapped_file_size_commit_log=segment_bytes, mapped_file_size_consume_queue=20 * 64,
                         max_hash_slot_num=16, max_index_num=64, flush_disk_type=flush_type,
                         flush_interval_commit_log_ms=5, flush_interval_consume_queue_ms=5)
    store = MessageStore.open(store_dir, config)
    out = sys.stdout
    out.write("ready\n")
    out.flush()
    n = 0
    while True:
        topic = rng.choice(["KillA", "KillB"])
        queue_id = rng.randrange(3)
        if rng.random() < 0.2:
            msgs = []
            for _ in range(rng.randint(2, 5)):
                key = f"{seed}-{n}"
                n += 1
                msgs.append(Message.create(topic, key.encode() * rng.randint(1, 40), tags=f"t{n % 3}", keys=key,
                                           queue_id=queue_id))
            result = store.put_batch(msgs)
            if result.ok:
                offset = result.commit_log_offset
                for i, size in enumerate(result.record_sizes):
                    out.write(f"ack {topic} {queue_id} {result.queue_offset + i} {offset} {msgs[i].keys}\n")
                    offset += size
        else:
            key = f"{seed}-{n}"
            n += 1
            result = store.put(Message.create(topic, key.encode() * rng.randint(1, 60), tags=f"t{n % 3}", keys=key,
                                              queue_id=queue_id))
            if result.ok:
                out.write(f"ack {topic} {queue_id} {result.queue_offset} {result.commit_log_offset} {key}\n")
        out.flush()


if __name__ == "__main__":
    main()
