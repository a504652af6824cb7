"""Opening a store whose segments cannot all be memory-mapped (ENOMEM: vm.max_map_count reached, or the
address space used up) raises a typed store error naming those causes, and leaves nothing mapped, open or
locked.

It was a bare OSError ("Cannot allocate memory"), and the segments of the file queue mapped before the one
that failed stayed mapped with their descriptors open (they were only in the loader's local list) for as
long as anything held the error.  The open runs in a subprocess whose address space is capped with
RLIMIT_AS (as in test_hunt19_fdscale_map_failure), so the cap cannot touch the test process."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import errno, os, pickle, resource, sys
    from rocketstore.errors import OutOfMappingsError, StoreError
    from rocketstore.message.record import Message
    from rocketstore.store.config import StoreConfig
    from rocketstore.store.message_store import MessageStore

    def vm_bytes():
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmSize"):
                    return int(line.split()[1]) * 1024
        raise RuntimeError("no VmSize")

    def store_maps():
        with open("/proc/self/maps") as f:
            return sum(1 for line in f if root in line)

    def store_fds():
        count = 0
        for fd in os.listdir("/proc/self/fd"):
            try:
                count += os.readlink("/proc/self/fd/" + fd).startswith(root)
            except FileNotFoundError:  # the listing's own descriptor
                pass
        return count

    root = sys.argv[1]
    seg = 16 << 20
    cfg = StoreConfig(mapped_file_size_commit_log=seg, mapped_file_size_consume_queue=6000,
                      preallocate_commit_log=False, warm_ahead_bytes=0, max_hash_slot_num=100, max_index_num=400)
    store = MessageStore.open(root, cfg, background=False)
    body = b"x" * (1 << 20)
    while store.max_commit_log_offset < 3 * seg + seg // 2:
        assert store.put(Message(topic="T", body=body)).status.name == "PUT_OK"
    store.close()
    print(len(os.listdir(os.path.join(root, "commitlog"))))

    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (vm_bytes() + 2 * seg + (8 << 20), hard))  # two segments fit
    failure = None
    try:
        MessageStore.open(root, cfg, background=False)
    except Exception as exc:
        failure = exc
    resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    print(type(failure).__name__, isinstance(failure, StoreError), isinstance(failure, OSError),
          failure.errno == errno.ENOMEM if isinstance(failure, OSError) else None)
    text = str(failure)
    print("vm.max_map_count" in text, "RLIMIT_AS" in text, root in text)
    copy = pickle.loads(pickle.dumps(failure))
    print(type(copy).__name__, str(copy) == text)
    # the error is still held here: nothing of the store may stay mapped or open meanwhile
    print(store_maps(), store_fds())
    store = MessageStore.open(root, cfg, background=False)  # not locked
    print(store.get("T", 0, 0, 1).messages[0].body == body)
    store.close()
""")


def test_open_out_of_address_space_is_typed_and_leaves_nothing_mapped(tmp_path) -> None:
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "store")], capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines == ["4", "OutOfMappingsError True True True", "True True True", "OutOfMappingsError True", "0 0",
                     "True"], proc.stdout
