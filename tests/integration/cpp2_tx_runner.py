"""Drive the official RocketMQ C++ client 2.x (librocketmq "2.1.0_cvs", loaded with ctypes from the path in
$RMQ_CPP2_LIB) in its own process: its transactional producer, through the library's C API.

The 1.x client of cpp_client_runner.py has no transactional producer; this one does (CreateTransactionProducer,
SendMessageTransaction and a checker callback the broker's transaction check reaches).  The library spawns
threads and may hang on shutdown, so tests run it here, in a subprocess they can kill, and read JSON lines:

    python cpp2_tx_runner.py tx-produce NAMESRV TOPIC GROUP COUNT --local A[,B...] [--check A[,B...]]
                                         [--tags T1,T2] [--prop K=V]... [--check-unknown-first N] [--delay LEVEL]
                                         [--pad N]
        actions are commit, rollback or unknown (the CTransactionStatus the callback returns); a comma list is
        used cyclically, message i getting LIST[i % len(LIST)].  --local is what the local transaction executor
        returns right after the half message is stored, --check what the checker answers when the broker
        checks back (default unknown); with --check-unknown-first N the first N checks of each message answer
        unknown whatever --check says; --delay sets a delay level on every message (SetDelayTimeLevel: the
        C++ client, unlike the Java one, does not clear it from transactional messages); --pad N appends a
        space and N "x" to every body (the library compresses bodies over 4 KiB: sysFlag COMPRESSED).
        One {"i", "t", "status", "msg_id", "offset", "local", "executed", "uniq_key", "transaction_id"} line per
        send ("status" is the CSendStatus name of the half message's send, "msg_id" the id and "offset" the
        (half) queue offset SendMessageTransaction returned, "executed" whether the executor ran, "uniq_key" /
        "transaction_id" what it saw on the message), or {"i", "status": "FAILED", "code", "message"} when
        SendMessageTransaction fails (the library's last error text); then {"sent": true}.  Each check callback writes
        {"check": true, "t", "n", "i", "answer", "msg_id", "body", "topic", "tags", "keys", "queue_id",
        "queue_offset", "commit_log_offset", "prepared_transaction_offset", "transaction_id", "props"} ("n"
        counts the checks of that message, "props" holds the transaction properties and the --prop keys).
        The producer stays up (checks arrive later) until a "stop" line or EOF on stdin, then
        {"shutdown": true, "clean": ShutdownProducer returned within 10 s}.
    python cpp2_tx_runner.py probe
        {"ok": true, "version": ...} once the library loads and a producer can be created.

Message i has body ``body-i ünï``, key ``key-i`` and tag TAGS[i % len(TAGS)] (TagA,TagB by default); "{i}" in a
--prop value is replaced by i.  With RMQ_ACCESS_KEY / RMQ_SECRET_KEY (and RMQ_CHANNEL) set, the producer signs
its requests (SetProducerSessionCredentials).  The library logs to $ROCKETMQ_CLIENT_LOG_DIR (tests point it and
HOME at a temporary directory); RMQ_CPP2_LOG_LEVEL (a CLogLevel, 5 = debug) raises its detail.  Exits with os._exit so a hanging C++ destructor cannot keep the process alive.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
import threading
import time
from collections import Counter
from ctypes import CFUNCTYPE, POINTER, Structure, c_char, c_char_p, c_int, c_longlong, c_void_p

_print_lock = threading.Lock()

#: CTransactionStatus (include/CTransactionStatus.h)
ACTIONS = {"commit": 0, "rollback": 1, "unknown": 2}
#: CSendStatus (include/CSendResult.h)
SEND_STATUS = {0: "SEND_OK", 1: "SEND_FLUSH_DISK_TIMEOUT", 2: "SEND_FLUSH_SLAVE_TIMEOUT", 3: "SEND_SLAVE_NOT_AVAILABLE"}
#: properties a check line reports besides the --prop keys
CHECK_PROPS = ("UNIQ_KEY", "TRAN_MSG", "PGROUP", "REAL_TOPIC", "REAL_QID", "TRANSACTION_CHECK_TIMES",
               "TRAN_PREPARED_QUEUE_OFFSET", "CHECK_IMMUNITY_TIME_IN_SECONDS", "__transactionId__", "TAGS", "KEYS")


class CSendResult(Structure):
    # include/CSendResult.h; checked against SendMessageTransaction in the 2.1.0_cvs build: sendStatus is
    # written at 0, msgId (strncpy of 255 bytes) at 4, offset at 0x108
    _fields_ = [("sendStatus", c_int), ("msgId", c_char * 256), ("offset", c_longlong)]


# CTransactionStatus (*)(CProducer*, CMessageExt* / CMessage*, void*)
CHECKER = CFUNCTYPE(c_int, c_void_p, c_void_p, c_void_p)
EXECUTOR = CFUNCTYPE(c_int, c_void_p, c_void_p, c_void_p)


def emit(obj: object) -> None:
    with _print_lock:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()


def body_of(i: int) -> str:
    return f"body-{i} ünï"


def load(path: str) -> ctypes.CDLL:
    lib = ctypes.CDLL(path)
    sig = {
        "CreateTransactionProducer": (c_void_p, [c_char_p, CHECKER, c_void_p]),
        "SetProducerNameServerAddress": (c_int, [c_void_p, c_char_p]),
        "SetProducerSessionCredentials": (c_int, [c_void_p, c_char_p, c_char_p, c_char_p]),
        "SetProducerLogLevel": (c_int, [c_void_p, c_int]),
        "SetProducerSendMsgTimeout": (c_int, [c_void_p, c_int]),
        "StartProducer": (c_int, [c_void_p]),
        "ShutdownProducer": (c_int, [c_void_p]),
        "DestroyProducer": (c_int, [c_void_p]),
        "ShowProducerVersion": (c_char_p, [c_void_p]),
        "SendMessageTransaction": (c_int, [c_void_p, c_void_p, EXECUTOR, c_void_p, POINTER(CSendResult)]),
        "GetLatestErrorMessage": (c_char_p, []),
        "CreateMessage": (c_void_p, [c_char_p]),
        "DestroyMessage": (c_int, [c_void_p]),
        "SetByteMessageBody": (c_int, [c_void_p, c_char_p, c_int]),
        "SetMessageTags": (c_int, [c_void_p, c_char_p]),
        "SetMessageKeys": (c_int, [c_void_p, c_char_p]),
        "SetMessageProperty": (c_int, [c_void_p, c_char_p, c_char_p]),
        "SetDelayTimeLevel": (c_int, [c_void_p, c_int]),
        "GetOriginMessageProperty": (c_char_p, [c_void_p, c_char_p]),
        "GetMessageTopic": (c_char_p, [c_void_p]),
        "GetMessageTags": (c_char_p, [c_void_p]),
        "GetMessageKeys": (c_char_p, [c_void_p]),
        "GetMessageBody": (c_char_p, [c_void_p]),
        "GetMessageProperty": (c_char_p, [c_void_p, c_char_p]),
        "GetMessageId": (c_char_p, [c_void_p]),
        "GetMessageQueueId": (c_int, [c_void_p]),
        "GetMessageQueueOffset": (c_longlong, [c_void_p]),
        "GetMessageCommitLogOffset": (c_longlong, [c_void_p]),
        "GetMessagePreparedTransactionOffset": (c_longlong, [c_void_p]),
    }
    for name, (restype, argtypes) in sig.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes
    return lib


def _text(value: bytes | None) -> str | None:
    return None if value is None else value.decode("utf-8", "replace")


def _cycle(spec: str) -> list[str]:
    actions = spec.split(",")
    unknown = [a for a in actions if a not in ACTIONS]
    if unknown:
        raise SystemExit(f"unknown transaction action(s) {unknown}: use commit, rollback or unknown")
    return actions


class TxProducer:
    def __init__(self, lib: ctypes.CDLL, namesrv: str, topic: str, group: str, local: list[str], check: list[str],
                 check_unknown_first: int, props: dict[str, str], delay: int = 0, pad: int = 0) -> None:
        self.lib = lib
        self.delay = delay
        self.pad = pad
        self.topic = topic
        self.local = local
        self.check = check
        self.check_unknown_first = check_unknown_first
        self.props = props
        self.checks: Counter[str] = Counter()
        self.executed: dict[int, dict[str, str | None]] = {}
        # the callbacks must outlive every call the library may make into them
        self.checker = CHECKER(self._on_check)
        self.executor = EXECUTOR(self._on_execute)
        self.handle = lib.CreateTransactionProducer(group.encode(), self.checker, None)
        if not self.handle:
            raise RuntimeError(f"CreateTransactionProducer failed: {_text(lib.GetLatestErrorMessage())}")
        self._ok("SetProducerNameServerAddress", lib.SetProducerNameServerAddress(self.handle, namesrv.encode()))
        log_level = os.environ.get("RMQ_CPP2_LOG_LEVEL")  # CLogLevel: 1 FATAL .. 5 DEBUG, 6 TRACE
        if log_level:
            self._ok("SetProducerLogLevel", lib.SetProducerLogLevel(self.handle, int(log_level)))
        access_key = os.environ.get("RMQ_ACCESS_KEY")
        if access_key is not None:
            self._ok("SetProducerSessionCredentials", lib.SetProducerSessionCredentials(
                self.handle, access_key.encode(), os.environ.get("RMQ_SECRET_KEY", "").encode(),
                os.environ.get("RMQ_CHANNEL", "").encode()))

    def _ok(self, what: str, code: int) -> None:
        if code != 0:
            raise RuntimeError(f"{what} returned {code}: {_text(self.lib.GetLatestErrorMessage())}")

    def start(self) -> None:
        self._ok("StartProducer", self.lib.StartProducer(self.handle))

    def _on_execute(self, producer: int, msg: int, data: int | None) -> int:
        i = data or 0
        try:
            self.executed[i] = {
                "uniq_key": _text(self.lib.GetOriginMessageProperty(msg, b"UNIQ_KEY")),
                "transaction_id": _text(self.lib.GetOriginMessageProperty(msg, b"__transactionId__"))}
        except BaseException as exc:  # noqa: BLE001 - an exception must not unwind into C++
            emit({"callback_error": f"executor: {type(exc).__name__}: {exc}"})
        return ACTIONS[self.local[i % len(self.local)]]

    def _on_check(self, producer: int, msg: int, data: int | None) -> int:
        answer = "unknown"
        try:
            lib = self.lib
            keys = _text(lib.GetMessageKeys(msg)) or ""
            i = int(keys.rsplit("-", 1)[1]) if keys.startswith("key-") else -1
            uniq = _text(lib.GetMessageProperty(msg, b"UNIQ_KEY")) or ""
            self.checks[uniq] += 1
            n = self.checks[uniq]
            if n > self.check_unknown_first and i >= 0:
                answer = self.check[i % len(self.check)]
            names = list(CHECK_PROPS) + [k for k in self.props if k not in CHECK_PROPS]
            props = {k: _text(lib.GetMessageProperty(msg, k.encode())) for k in names}
            emit({"check": True, "t": time.time(), "n": n, "i": i, "answer": answer,
                  "msg_id": _text(lib.GetMessageId(msg)),
                  "body": _text(lib.GetMessageBody(msg)), "topic": _text(lib.GetMessageTopic(msg)),
                  "tags": _text(lib.GetMessageTags(msg)), "keys": keys, "queue_id": lib.GetMessageQueueId(msg),
                  "queue_offset": lib.GetMessageQueueOffset(msg),
                  "commit_log_offset": lib.GetMessageCommitLogOffset(msg),
                  "prepared_transaction_offset": lib.GetMessagePreparedTransactionOffset(msg),
                  "transaction_id": props.get("__transactionId__") or None,
                  "props": {k: v for k, v in props.items() if v}})
        except BaseException as exc:  # noqa: BLE001 - an exception must not unwind into C++
            emit({"callback_error": f"checker: {type(exc).__name__}: {exc}"})
        return ACTIONS[answer]

    def send(self, i: int, tags: list[str]) -> dict[str, object]:
        lib = self.lib
        msg = lib.CreateMessage(self.topic.encode())
        try:
            body = (body_of(i) + " " + "x" * self.pad if self.pad else body_of(i)).encode()
            lib.SetByteMessageBody(msg, body, len(body))
            lib.SetMessageKeys(msg, f"key-{i}".encode())
            lib.SetMessageTags(msg, tags[i % len(tags)].encode())
            for key, value in self.props.items():
                lib.SetMessageProperty(msg, key.encode(), value.replace("{i}", str(i)).encode())
            if self.delay:
                lib.SetDelayTimeLevel(msg, self.delay)
            result = CSendResult()
            code = lib.SendMessageTransaction(self.handle, msg, self.executor, i, ctypes.byref(result))
        finally:
            lib.DestroyMessage(msg)
        local = self.local[i % len(self.local)]
        if code != 0:
            return {"i": i, "status": "FAILED", "code": code, "message": _text(lib.GetLatestErrorMessage()),
                    "local": local}
        executed = self.executed.get(i, {})
        return {"i": i, "t": time.time(), "status": SEND_STATUS.get(result.sendStatus, str(result.sendStatus)),
                "msg_id": _text(result.msgId), "offset": result.offset, "local": local,
                "executed": i in self.executed, **executed}

    def shutdown(self, timeout_s: float = 10.0) -> bool:
        """ShutdownProducer in a helper thread: True when it returned within *timeout_s*."""
        done = threading.Event()

        def stop() -> None:
            self.lib.ShutdownProducer(self.handle)
            done.set()

        threading.Thread(target=stop, daemon=True).start()
        return done.wait(timeout_s)


def tx_produce(lib: ctypes.CDLL, argv: list[str]) -> None:
    namesrv, topic, group, count = argv[0], argv[1], argv[2], int(argv[3])
    local: list[str] | None = None
    check = ["unknown"]
    tags = ["TagA", "TagB"]
    props: dict[str, str] = {}
    check_unknown_first = delay = pad = 0
    rest = argv[4:]
    while rest:
        if len(rest) < 2:
            raise SystemExit(f"flag {rest[0]!r} needs a value")
        flag, value, rest = rest[0], rest[1], rest[2:]
        if flag == "--local":
            local = _cycle(value)
        elif flag == "--check":
            check = _cycle(value)
        elif flag == "--tags":
            tags = value.split(",")
        elif flag == "--prop":
            key, _, props[key] = value.partition("=")
        elif flag == "--check-unknown-first":
            check_unknown_first = int(value)
        elif flag == "--delay":
            delay = int(value)
        elif flag == "--pad":
            pad = int(value)
        else:
            raise SystemExit(f"unknown flag {flag!r}")
    if local is None:
        raise SystemExit("--local commit|rollback|unknown is required")
    producer = TxProducer(lib, namesrv, topic, group, local, check, check_unknown_first, props, delay, pad)
    producer.start()
    for i in range(count):
        emit(producer.send(i, tags))
    emit({"sent": True})
    for line in sys.stdin:
        if line.strip() == "stop":
            break
    emit({"shutdown": True, "clean": producer.shutdown()})


def probe(lib: ctypes.CDLL) -> None:
    handle = lib.CreateTransactionProducer(b"cpp2-probe-group", CHECKER(lambda p, m, d: 2), None)
    if not handle:
        raise RuntimeError(f"CreateTransactionProducer failed: {_text(lib.GetLatestErrorMessage())}")
    emit({"ok": True, "version": _text(lib.ShowProducerVersion(handle))})


def main(argv: list[str]) -> None:
    path = os.environ.get("RMQ_CPP2_LIB")
    if not path:
        raise SystemExit("set RMQ_CPP2_LIB to the path of librocketmq.so (2.x)")
    lib = load(path)
    command = argv[0] if argv else ""
    if command == "tx-produce":
        tx_produce(lib, argv[1:])
    elif command == "probe":
        probe(lib)
    else:
        raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    code = 0
    try:
        main(sys.argv[1:])
    except BaseException as exc:  # noqa: BLE001 - report anything, then leave without running C++ destructors
        emit({"error": f"{type(exc).__name__}: {exc}"})
        code = 1
    sys.stdout.flush()
    os._exit(code)
