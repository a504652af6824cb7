"""Drive the official RocketMQ C++ client 2.x (librocketmq "2.1.0_cvs", loaded with ctypes from the path in
$RMQ_CPP2_LIB) in its own process, through the library's C API: its transactional producer, its ordinary
producer, its push consumer and its pull consumer.

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
    python cpp2_tx_runner.py produce NAMESRV TOPIC GROUP COUNT [--mode MODE] [--tags T1,T2] [--prop K=V]...
                                      [--batch N] [--shards N] [--delay LEVEL] [--pad N] [--trace on]
                                      [--hold on]
        CreateProducer, then COUNT messages sent one by one by MODE:
          sync        SendMessageSync: {"i", "t", "status", "msg_id", "offset"} per send
          oneway      SendMessageOneway: {"i", "t", "status": "ONEWAY"}
          orderly     SendMessageOrderly with a selector callback that picks queue i % (queue count) (the
                      selector's argument is i + 1: the C API refuses a NULL one): the send line has "queue"
                      (the chosen index) and "queues" (the count the selector saw)
          sharding    SendMessageOrderlyByShardingKey with key "shard-{i % N}" (--shards, default 3): "shard"
          async       SendMessageAsync (its callbacks get the CSendResult or CMQException alone, so the lines
                      carry no "i"): all COUNT sends are issued, then one {"t", "status", "msg_id", "offset"}
                      or {"t", "status": "EXCEPTION", "error", "message"} line per callback
          async-data  SendAsync (callbacks with the message and user data: the line has "i")
        --batch N sends groups of N with SendBatchMessage instead: {"i", "n", "t", "status", "msg_id", "offset"}
        per batch.  ``--trace on`` turns message trace on before the start (SetProducerMessageTrace(OPEN); 2.1.0
        traces sync sends only, to rmq_sys_TRACE_DATA_<the send answer's MSG_REGION>, from a thread pool whose
        queued sends its ShutdownProducer drops); ``--hold on`` waits for a "stop" line (or EOF) on stdin between
        "done" and the shutdown, so that such background work can finish.  A send the C API fails
        gives {"i", "status": "FAILED", "code", "message"}.  Then
        {"done": true} (for async modes once every callback has run, at most 60 s) and, after
        ShutdownProducer, {"shutdown": true, "clean"}; the process exits without waiting for stdin unless
        --hold on.
    python cpp2_tx_runner.py consume NAMESRV TOPIC GROUP [EXPRESSION] [--fail-first | --fail-always] [--orderly]
                                      [--broadcast] [--props K1,K2] [--threads N] [--trace]
        CreatePushConsumer, Subscribe(TOPIC, EXPRESSION or "*"), RegisterMessageCallback (or
        RegisterMessageCallbackOrderly with --orderly), SetPushConsumerMessageModel(BROADCASTING) with
        --broadcast; {"started": true} once StartPushConsumer returned, then one {"t", "body", "topic",
        "tags", "keys", "id", "queue_id", "queue_offset", "reconsume_times", "commit_log_offset",
        "store_size", "born_timestamp", "store_timestamp", "uniq_key", "props", "failed"} line per delivery
        ("props" holds the --props keys); with --fail-first the first delivery of each body answers
        E_RECONSUME_LATER, with --fail-always every one does.  A "stop" line (or EOF) on stdin shuts the
        consumer down: {"shutdown": true, "clean"}.  --trace turns message trace on
        (SetPushConsumerMessageTrace(OPEN)): 2.1.0's ShutdownPushConsumer dereferences the trace producer,
        which exists only with trace on, so without --trace the process dies of SIGSEGV in the shutdown
        (before it commits its offsets) and writes no "shutdown" line.
    python cpp2_tx_runner.py pull NAMESRV TOPIC GROUP [EXPRESSION] [--max N] [--props K1,K2] [--from OFFSET]
        CreatePullConsumer and FetchSubscriptionMessageQueues(TOPIC): {"queues": [{"topic", "broker",
        "queue_id"}...]}; then for each queue Pull(queue, EXPRESSION, offset, N) from offset 0 (or OFFSET), each
        pull from the previous nextBeginOffset, until a pull is neither FOUND nor NO_MATCHED_MSG or does not
        move on: a {"pull": true, "queue_id", "offset", "status", "next", "min", "max", "size"} line per pull
        (status a CPullStatus name), each followed by one line per message as consume writes them (no
        "failed"); then {"done": true} and, after ShutdownPullConsumer, {"shutdown": true, "clean"}.
    python cpp2_tx_runner.py probe
        {"ok": true, "version": ...} once the library loads and a producer can be created.

Message i has body ``body-i ünï``, key ``key-i`` and tag TAGS[i % len(TAGS)] (TagA,TagB by default); "{i}" in a
--prop value is replaced by i.  With RMQ_ACCESS_KEY / RMQ_SECRET_KEY (and RMQ_CHANNEL) set, producers and
consumers sign their requests (Set*SessionCredentials).  The library logs to $ROCKETMQ_CLIENT_LOG_DIR (tests
point it and HOME at a temporary directory); RMQ_CPP2_LOG_LEVEL (a CLogLevel, 5 = debug) raises its detail.
Exits with os._exit so a hanging C++ destructor cannot keep the process alive.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from ctypes import CFUNCTYPE, POINTER, Structure, c_char, c_char_p, c_int, c_longlong, c_void_p
from typing import Any

from runner_lines import body_of, emit, flag_pairs, run_main

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


class CMQException(Structure):
    # include/CMQException.h
    _fields_ = [("error", c_int), ("line", c_int), ("file", c_char * 256), ("msg", c_char * 512),
                ("type", c_char * 128)]


class CMessageQueue(Structure):
    # include/CMessageQueue.h
    _fields_ = [("topic", c_char * 512), ("brokerName", c_char * 256), ("queueId", c_int)]


class CPullResult(Structure):
    # include/CPullResult.h (returned and released by value)
    _fields_ = [("pullStatus", c_int), ("nextBeginOffset", c_longlong), ("minOffset", c_longlong),
                ("maxOffset", c_longlong), ("msgFoundList", POINTER(c_void_p)), ("size", c_int),
                ("pData", c_void_p)]


#: CPullStatus (include/CPullResult.h)
PULL_STATUS = {0: "FOUND", 1: "NO_NEW_MSG", 2: "NO_MATCHED_MSG", 3: "OFFSET_ILLEGAL", 4: "BROKER_TIMEOUT"}
#: CConsumeStatus (include/CPushConsumer.h) and CMessageModel (include/CCommon.h)
CONSUME_SUCCESS, RECONSUME_LATER = 0, 1
BROADCASTING, CLUSTERING = 0, 1
#: CTraceModel (include/CCommon.h)
TRACE_OPEN, TRACE_CLOSE = 0, 1

# CTransactionStatus (*)(CProducer*, CMessageExt* / CMessage*, void*)
CHECKER = CFUNCTYPE(c_int, c_void_p, c_void_p, c_void_p)
EXECUTOR = CFUNCTYPE(c_int, c_void_p, c_void_p, c_void_p)
# int (*QueueSelectorCallback)(int size, CMessage* msg, void* arg)
SELECTOR = CFUNCTYPE(c_int, c_int, c_void_p, c_void_p)
# void (*CSendSuccessCallback)(CSendResult) / (*CSendExceptionCallback)(CMQException)
SEND_SUCCESS = CFUNCTYPE(None, CSendResult)
SEND_EXCEPTION = CFUNCTYPE(None, CMQException)
# void (*COnSendSuccessCallback)(CSendResult, CMessage*, void*) / (*COnSendExceptionCallback)(CMQException, ...)
ON_SEND_SUCCESS = CFUNCTYPE(None, CSendResult, c_void_p, c_void_p)
ON_SEND_EXCEPTION = CFUNCTYPE(None, CMQException, c_void_p, c_void_p)
# int (*MessageCallBack)(CPushConsumer*, CMessageExt*)
MESSAGE_CALLBACK = CFUNCTYPE(c_int, c_void_p, c_void_p)


#: the C API's functions: (restype, argtypes); one table for every mode
SIGNATURES: dict[str, tuple[Any, list[Any]]] = {
    "CreateProducer": (c_void_p, [c_char_p]),
    "CreateTransactionProducer": (c_void_p, [c_char_p, CHECKER, c_void_p]),
    "SetProducerNameServerAddress": (c_int, [c_void_p, c_char_p]),
    "SetProducerSessionCredentials": (c_int, [c_void_p, c_char_p, c_char_p, c_char_p]),
    "SetProducerLogLevel": (c_int, [c_void_p, c_int]),
    "SetProducerSendMsgTimeout": (c_int, [c_void_p, c_int]),
    "SetProducerMessageTrace": (c_int, [c_void_p, c_int]),
    "StartProducer": (c_int, [c_void_p]),
    "ShutdownProducer": (c_int, [c_void_p]),
    "DestroyProducer": (c_int, [c_void_p]),
    "ShowProducerVersion": (c_char_p, [c_void_p]),
    "SendMessageTransaction": (c_int, [c_void_p, c_void_p, EXECUTOR, c_void_p, POINTER(CSendResult)]),
    "SendMessageSync": (c_int, [c_void_p, c_void_p, POINTER(CSendResult)]),
    "SendMessageOneway": (c_int, [c_void_p, c_void_p]),
    "SendMessageOrderly": (c_int, [c_void_p, c_void_p, SELECTOR, c_void_p, c_int, POINTER(CSendResult)]),
    "SendMessageOrderlyByShardingKey": (c_int, [c_void_p, c_void_p, c_char_p, POINTER(CSendResult)]),
    "SendMessageAsync": (c_int, [c_void_p, c_void_p, SEND_SUCCESS, SEND_EXCEPTION]),
    "SendAsync": (c_int, [c_void_p, c_void_p, ON_SEND_SUCCESS, ON_SEND_EXCEPTION, c_void_p]),
    "SendBatchMessage": (c_int, [c_void_p, c_void_p, POINTER(CSendResult)]),
    "CreateBatchMessage": (c_void_p, []),
    "AddMessage": (c_int, [c_void_p, c_void_p]),
    "DestroyBatchMessage": (c_int, [c_void_p]),
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
    "GetMessageReconsumeTimes": (c_int, [c_void_p]),
    "GetMessageStoreSize": (c_int, [c_void_p]),
    "GetMessageBornTimestamp": (c_longlong, [c_void_p]),
    "GetMessageStoreTimestamp": (c_longlong, [c_void_p]),
    "GetMessageQueueOffset": (c_longlong, [c_void_p]),
    "GetMessageCommitLogOffset": (c_longlong, [c_void_p]),
    "GetMessagePreparedTransactionOffset": (c_longlong, [c_void_p]),
    "CreatePushConsumer": (c_void_p, [c_char_p]),
    "SetPushConsumerNameServerAddress": (c_int, [c_void_p, c_char_p]),
    "SetPushConsumerSessionCredentials": (c_int, [c_void_p, c_char_p, c_char_p, c_char_p]),
    "SetPushConsumerLogLevel": (c_int, [c_void_p, c_int]),
    "SetPushConsumerMessageModel": (c_int, [c_void_p, c_int]),
    "SetPushConsumerThreadCount": (c_int, [c_void_p, c_int]),
    "SetPushConsumerMessageTrace": (c_int, [c_void_p, c_int]),
    "Subscribe": (c_int, [c_void_p, c_char_p, c_char_p]),
    "RegisterMessageCallback": (c_int, [c_void_p, MESSAGE_CALLBACK]),
    "RegisterMessageCallbackOrderly": (c_int, [c_void_p, MESSAGE_CALLBACK]),
    "StartPushConsumer": (c_int, [c_void_p]),
    "ShutdownPushConsumer": (c_int, [c_void_p]),
    "CreatePullConsumer": (c_void_p, [c_char_p]),
    "SetPullConsumerNameServerAddress": (c_int, [c_void_p, c_char_p]),
    "SetPullConsumerSessionCredentials": (c_int, [c_void_p, c_char_p, c_char_p, c_char_p]),
    "SetPullConsumerLogLevel": (c_int, [c_void_p, c_int]),
    "StartPullConsumer": (c_int, [c_void_p]),
    "ShutdownPullConsumer": (c_int, [c_void_p]),
    "FetchSubscriptionMessageQueues": (c_int, [c_void_p, c_char_p, POINTER(POINTER(CMessageQueue)),
                                               POINTER(c_int)]),
    "ReleaseSubscriptionMessageQueue": (c_int, [POINTER(CMessageQueue)]),
    "Pull": (CPullResult, [c_void_p, POINTER(CMessageQueue), c_char_p, c_longlong, c_int]),
    "ReleasePullResult": (c_int, [CPullResult]),
}


def load(path: str) -> ctypes.CDLL:
    """The library with every function of SIGNATURES it exports typed (a missing one fails where it is used)."""
    lib = ctypes.CDLL(path)
    for name, (restype, argtypes) in SIGNATURES.items():
        fn = getattr(lib, name, None)
        if fn is not None:
            fn.restype, fn.argtypes = restype, argtypes
    return lib


def need(lib: ctypes.CDLL, name: str) -> Any:
    """The exported function *name*, or SystemExit saying that this build lacks it."""
    fn = getattr(lib, name, None)
    if fn is None:
        raise SystemExit(f"the library does not export {name}")
    return fn


def _text(value: bytes | None) -> str | None:
    return None if value is None else value.decode("utf-8", "replace")


def ok(lib: ctypes.CDLL, what: str, code: int) -> None:
    """RuntimeError with the library's last error text unless *code* is 0 (OK)."""
    if code != 0:
        raise RuntimeError(f"{what} returned {code}: {_text(lib.GetLatestErrorMessage())}")


def configure(lib: ctypes.CDLL, kind: str, handle: int, namesrv: str) -> None:
    """Name server, log level (RMQ_CPP2_LOG_LEVEL) and credentials (RMQ_ACCESS_KEY ...) of a client of *kind*
    "Producer", "PushConsumer" or "PullConsumer": the C API names its setters Set<kind>...."""
    ok(lib, f"Set{kind}NameServerAddress", getattr(lib, f"Set{kind}NameServerAddress")(handle, namesrv.encode()))
    log_level = os.environ.get("RMQ_CPP2_LOG_LEVEL")  # CLogLevel: 1 FATAL .. 5 DEBUG, 6 TRACE
    if log_level:
        ok(lib, f"Set{kind}LogLevel", getattr(lib, f"Set{kind}LogLevel")(handle, int(log_level)))
    access_key = os.environ.get("RMQ_ACCESS_KEY")
    if access_key is not None:
        ok(lib, f"Set{kind}SessionCredentials", getattr(lib, f"Set{kind}SessionCredentials")(
            handle, access_key.encode(), os.environ.get("RMQ_SECRET_KEY", "").encode(),
            os.environ.get("RMQ_CHANNEL", "").encode()))


def bounded(call: Callable[[], object], timeout_s: float = 10.0) -> bool:
    """Run *call* (a Shutdown*) in a helper thread: True when it returned within *timeout_s*."""
    done = threading.Event()

    def run() -> None:
        call()
        done.set()

    threading.Thread(target=run, daemon=True).start()
    return done.wait(timeout_s)


def wait_for_stop() -> None:
    for line in sys.stdin:
        if line.strip() == "stop":
            break


def make_message(lib: ctypes.CDLL, topic: str, i: int, tags: list[str], props: dict[str, str], delay: int = 0,
                 pad: int = 0) -> int:
    """A CMessage for message i (the caller destroys it)."""
    msg = lib.CreateMessage(topic.encode())
    if not msg:
        raise RuntimeError(f"CreateMessage failed: {_text(lib.GetLatestErrorMessage())}")
    body = (body_of(i) + " " + "x" * pad if pad else body_of(i)).encode()
    lib.SetByteMessageBody(msg, body, len(body))
    lib.SetMessageKeys(msg, f"key-{i}".encode())
    lib.SetMessageTags(msg, tags[i % len(tags)].encode())
    for key, value in props.items():
        lib.SetMessageProperty(msg, key.encode(), value.replace("{i}", str(i)).encode())
    if delay:
        lib.SetDelayTimeLevel(msg, delay)
    return msg


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
        configure(lib, "Producer", self.handle, namesrv)

    def _ok(self, what: str, code: int) -> None:
        ok(self.lib, what, code)

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
        msg = make_message(lib, self.topic, i, tags, self.props, self.delay, self.pad)
        try:
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
        return bounded(lambda: self.lib.ShutdownProducer(self.handle), timeout_s)


def tx_produce(lib: ctypes.CDLL, argv: list[str]) -> None:
    namesrv, topic, group, count = argv[0], argv[1], argv[2], int(argv[3])
    local: list[str] | None = None
    check = ["unknown"]
    tags = ["TagA", "TagB"]
    props: dict[str, str] = {}
    check_unknown_first = delay = pad = 0
    for flag, value in flag_pairs(argv[4:]):
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
    wait_for_stop()
    emit({"shutdown": True, "clean": producer.shutdown()})


def _send_line(i: int, code: int, result: CSendResult, lib: ctypes.CDLL, **extra: object) -> dict[str, object]:
    if code != 0:
        return {"i": i, "status": "FAILED", "code": code, "message": _text(lib.GetLatestErrorMessage()), **extra}
    return {"i": i, "t": time.time(), "status": SEND_STATUS.get(result.sendStatus, str(result.sendStatus)),
            "msg_id": _text(result.msgId), "offset": result.offset, **extra}


def _exception_line(exc: CMQException) -> dict[str, object]:
    return {"t": time.time(), "status": "EXCEPTION", "error": exc.error, "message": _text(exc.msg)}


class AsyncSends:
    """The callbacks of SendMessageAsync / SendAsync: one line each, and a wait until all *count* have run."""

    def __init__(self, count: int) -> None:
        self.pending = count
        self.all_done = threading.Condition()
        # the callbacks must outlive every call the library may make into them
        self.on_success = SEND_SUCCESS(self._success)
        self.on_exception = SEND_EXCEPTION(self._exception)
        self.on_success_data = ON_SEND_SUCCESS(lambda result, msg, data: self._success(result, data or 0))
        self.on_exception_data = ON_SEND_EXCEPTION(lambda exc, msg, data: self._exception(exc, data or 0))

    def _finished(self, line: dict[str, object]) -> None:
        emit(line)
        with self.all_done:
            self.pending -= 1
            self.all_done.notify_all()

    def _success(self, result: CSendResult, i: int | None = None) -> None:
        try:
            self._finished({**({} if i is None else {"i": i}), "t": time.time(),
                            "status": SEND_STATUS.get(result.sendStatus, str(result.sendStatus)),
                            "msg_id": _text(result.msgId), "offset": result.offset})
        except BaseException as exc:  # noqa: BLE001 - an exception must not unwind into C++
            emit({"callback_error": f"send success: {type(exc).__name__}: {exc}"})

    def _exception(self, exc: CMQException, i: int | None = None) -> None:
        try:
            self._finished({**({} if i is None else {"i": i}), **_exception_line(exc)})
        except BaseException as error:  # noqa: BLE001 - an exception must not unwind into C++
            emit({"callback_error": f"send exception: {type(error).__name__}: {error}"})

    def issued_without_callback(self) -> None:
        """A send the C API refused at once: no callback will come for it."""
        with self.all_done:
            self.pending -= 1

    def wait(self, timeout_s: float) -> None:
        with self.all_done:
            if not self.all_done.wait_for(lambda: self.pending <= 0, timeout_s):
                raise TimeoutError(f"{self.pending} async send callback(s) missing after {timeout_s} s")


def produce(lib: ctypes.CDLL, argv: list[str]) -> None:
    namesrv, topic, group, count = argv[0], argv[1], argv[2], int(argv[3])
    mode, tags, batch, shards, delay, pad = "sync", ["TagA", "TagB"], 0, 3, 0, 0
    props: dict[str, str] = {}
    trace = hold = False
    for flag, value in flag_pairs(argv[4:]):
        if flag == "--mode":
            mode = value
        elif flag == "--trace":
            if value not in ("on", "off"):
                raise SystemExit("--trace takes on or off")
            trace = value == "on"
        elif flag == "--hold":
            if value not in ("on", "off"):
                raise SystemExit("--hold takes on or off")
            hold = value == "on"
        elif flag == "--tags":
            tags = value.split(",")
        elif flag == "--prop":
            key, _, props[key] = value.partition("=")
        elif flag == "--batch":
            batch = int(value)
        elif flag == "--shards":
            shards = int(value)
        elif flag == "--delay":
            delay = int(value)
        elif flag == "--pad":
            pad = int(value)
        else:
            raise SystemExit(f"unknown flag {flag!r}")
    if mode not in ("sync", "oneway", "orderly", "sharding", "async", "async-data"):
        raise SystemExit(f"unknown mode {mode!r}")
    handle = need(lib, "CreateProducer")(group.encode())
    if not handle:
        raise RuntimeError(f"CreateProducer failed: {_text(lib.GetLatestErrorMessage())}")
    configure(lib, "Producer", handle, namesrv)
    if trace:
        ok(lib, "SetProducerMessageTrace", need(lib, "SetProducerMessageTrace")(handle, TRACE_OPEN))
    ok(lib, "StartProducer", lib.StartProducer(handle))

    def message(i: int) -> int:
        return make_message(lib, topic, i, tags, props, delay, pad)

    seen_by_selector: dict[int, int] = {}

    def select(size: int, msg: int, arg: int | None) -> int:
        i = (arg or 1) - 1
        seen_by_selector[i] = size
        return i % size

    selector = SELECTOR(select)
    sends = AsyncSends(count)
    kept: list[int] = []  # SendAsync keeps the CMessage pointer for its callbacks: destroyed at the end
    i = 0
    while i < count:
        result = CSendResult()
        if batch:
            n = min(batch, count - i)
            batch_msg = need(lib, "CreateBatchMessage")()
            try:
                for j in range(i, i + n):
                    msg = message(j)
                    try:
                        ok(lib, "AddMessage", lib.AddMessage(batch_msg, msg))
                    finally:
                        lib.DestroyMessage(msg)
                code = need(lib, "SendBatchMessage")(handle, batch_msg, ctypes.byref(result))
            finally:
                lib.DestroyBatchMessage(batch_msg)
            emit(_send_line(i, code, result, lib, n=n))
            i += n
            continue
        msg = message(i)
        if mode == "async-data":
            kept.append(msg)
            code = need(lib, "SendAsync")(handle, msg, sends.on_success_data, sends.on_exception_data, i)
            if code != 0:
                sends.issued_without_callback()
                emit(_send_line(i, code, result, lib))
            i += 1
            continue
        try:
            if mode == "sync":
                emit(_send_line(i, need(lib, "SendMessageSync")(handle, msg, ctypes.byref(result)), result, lib))
            elif mode == "oneway":
                code = need(lib, "SendMessageOneway")(handle, msg)
                emit({"i": i, "t": time.time(), "status": "ONEWAY"} if code == 0 else _send_line(i, code, result, lib))
            elif mode == "orderly":
                code = need(lib, "SendMessageOrderly")(handle, msg, selector, i + 1, 3, ctypes.byref(result))
                queues = seen_by_selector.get(i)
                emit(_send_line(i, code, result, lib, queues=queues, queue=None if queues is None else i % queues))
            elif mode == "sharding":
                shard = f"shard-{i % shards}"
                code = need(lib, "SendMessageOrderlyByShardingKey")(handle, msg, shard.encode(), ctypes.byref(result))
                emit(_send_line(i, code, result, lib, shard=shard))
            else:  # async
                code = need(lib, "SendMessageAsync")(handle, msg, sends.on_success, sends.on_exception)
                if code != 0:
                    sends.issued_without_callback()
                    emit(_send_line(i, code, result, lib))
        finally:
            lib.DestroyMessage(msg)
        i += 1
    if mode in ("async", "async-data") and not batch:
        sends.wait(60)
    for msg in kept:
        lib.DestroyMessage(msg)
    emit({"done": True})
    if hold:
        wait_for_stop()
    emit({"shutdown": True, "clean": bounded(lambda: lib.ShutdownProducer(handle))})


def describe(lib: ctypes.CDLL, msg: int, props: list[str]) -> dict[str, object]:
    """What a CMessageExt carries, as a consume / pull line."""
    return {"t": time.time(), "body": _text(lib.GetMessageBody(msg)), "topic": _text(lib.GetMessageTopic(msg)),
            "tags": _text(lib.GetMessageTags(msg)), "keys": _text(lib.GetMessageKeys(msg)),
            "id": _text(lib.GetMessageId(msg)), "queue_id": lib.GetMessageQueueId(msg),
            "queue_offset": lib.GetMessageQueueOffset(msg), "reconsume_times": lib.GetMessageReconsumeTimes(msg),
            "commit_log_offset": lib.GetMessageCommitLogOffset(msg), "store_size": lib.GetMessageStoreSize(msg),
            "born_timestamp": lib.GetMessageBornTimestamp(msg), "store_timestamp": lib.GetMessageStoreTimestamp(msg),
            "uniq_key": _text(lib.GetMessageProperty(msg, b"UNIQ_KEY")),
            "props": {k: _text(lib.GetMessageProperty(msg, k.encode())) for k in props}}


def _consumer_args(argv: list[str], valued: tuple[str, ...], switches: tuple[str, ...]
                   ) -> tuple[list[str], dict[str, str], set[str]]:
    positional: list[str] = []
    values: dict[str, str] = {}
    flags: set[str] = set()
    rest = list(argv)
    while rest:
        arg, rest = rest[0], rest[1:]
        if arg in valued:
            if not rest:
                raise SystemExit(f"flag {arg!r} needs a value")
            values[arg], rest = rest[0], rest[1:]
        elif arg in switches:
            flags.add(arg)
        elif arg.startswith("--"):
            raise SystemExit(f"unknown flag {arg!r}")
        else:
            positional.append(arg)
    if len(positional) not in (3, 4):
        raise SystemExit("NAMESRV TOPIC GROUP [EXPRESSION] expected")
    if len(positional) == 3:
        positional.append("*")
    return positional, values, flags


def consume(lib: ctypes.CDLL, argv: list[str]) -> None:
    (namesrv, topic, group, expression), values, flags = _consumer_args(
        argv, ("--props", "--threads"), ("--fail-first", "--fail-always", "--orderly", "--broadcast", "--trace"))
    props = [k for k in values.get("--props", "").split(",") if k]
    failed: set[str] = set()

    def on_message(consumer: int, msg: int) -> int:
        try:
            line = describe(lib, msg, props)
            body = str(line["body"])
            fail = "--fail-always" in flags or ("--fail-first" in flags and body not in failed)
            failed.add(body)
            emit({**line, "failed": fail})
            return RECONSUME_LATER if fail else CONSUME_SUCCESS
        except BaseException as exc:  # noqa: BLE001 - an exception must not unwind into C++
            emit({"callback_error": f"message callback: {type(exc).__name__}: {exc}"})
            return RECONSUME_LATER

    callback = MESSAGE_CALLBACK(on_message)  # referenced until the process exits
    handle = need(lib, "CreatePushConsumer")(group.encode())
    if not handle:
        raise RuntimeError(f"CreatePushConsumer failed: {_text(lib.GetLatestErrorMessage())}")
    configure(lib, "PushConsumer", handle, namesrv)
    if "--broadcast" in flags:
        ok(lib, "SetPushConsumerMessageModel", lib.SetPushConsumerMessageModel(handle, BROADCASTING))
    if "--trace" in flags:
        ok(lib, "SetPushConsumerMessageTrace", lib.SetPushConsumerMessageTrace(handle, TRACE_OPEN))
    if "--threads" in values:
        ok(lib, "SetPushConsumerThreadCount", lib.SetPushConsumerThreadCount(handle, int(values["--threads"])))
    ok(lib, "Subscribe", lib.Subscribe(handle, topic.encode(), expression.encode()))
    register = "RegisterMessageCallbackOrderly" if "--orderly" in flags else "RegisterMessageCallback"
    ok(lib, register, need(lib, register)(handle, callback))
    ok(lib, "StartPushConsumer", lib.StartPushConsumer(handle))
    emit({"started": True})
    wait_for_stop()
    emit({"shutdown": True, "clean": bounded(lambda: lib.ShutdownPushConsumer(handle))})


def pull(lib: ctypes.CDLL, argv: list[str]) -> None:
    (namesrv, topic, group, expression), values, _ = _consumer_args(argv, ("--props", "--max", "--from"), ())
    props = [k for k in values.get("--props", "").split(",") if k]
    max_nums = int(values.get("--max", "32"))
    handle = need(lib, "CreatePullConsumer")(group.encode())
    if not handle:
        raise RuntimeError(f"CreatePullConsumer failed: {_text(lib.GetLatestErrorMessage())}")
    configure(lib, "PullConsumer", handle, namesrv)
    ok(lib, "StartPullConsumer", lib.StartPullConsumer(handle))
    mqs = POINTER(CMessageQueue)()
    size = c_int(0)
    ok(lib, "FetchSubscriptionMessageQueues",
       lib.FetchSubscriptionMessageQueues(handle, topic.encode(), ctypes.byref(mqs), ctypes.byref(size)))
    queues = [mqs[k] for k in range(size.value)]
    emit({"queues": [{"topic": _text(q.topic), "broker": _text(q.brokerName), "queue_id": q.queueId}
                     for q in queues]})
    for mq in queues:
        offset = int(values.get("--from", "0"))
        while True:
            result = lib.Pull(handle, ctypes.byref(mq), expression.encode(), offset, max_nums)
            emit({"pull": True, "queue_id": mq.queueId, "offset": offset,
                  "status": PULL_STATUS.get(result.pullStatus, str(result.pullStatus)), "next": result.nextBeginOffset,
                  "min": result.minOffset, "max": result.maxOffset, "size": result.size})
            for k in range(result.size):
                emit(describe(lib, result.msgFoundList[k], props))
            if result.size:
                lib.ReleasePullResult(result)
            # FOUND or NO_MATCHED_MSG (nothing matched the expression in what the broker scanned) move on
            if result.pullStatus not in (0, 2) or result.nextBeginOffset <= offset:
                break
            offset = result.nextBeginOffset
    lib.ReleaseSubscriptionMessageQueue(mqs)
    emit({"done": True})
    emit({"shutdown": True, "clean": bounded(lambda: lib.ShutdownPullConsumer(handle))})


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
    elif command == "produce":
        produce(lib, argv[1:])
    elif command == "consume":
        consume(lib, argv[1:])
    elif command == "pull":
        pull(lib, argv[1:])
    elif command == "probe":
        probe(lib)
    else:
        raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    run_main(main)
