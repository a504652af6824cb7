"""The properties a 4.9.3 broker takes that rocketstore keeps but does not act on, and how 4.9.3 converts values.

A 4.9.3 broker's configuration is every field of its BrokerConfig, NettyServerConfig, NettyClientConfig and
MessageStoreConfig plus every other key of the file it was started with.  GET_BROKER_CONFIG shows them all and
UPDATE_BROKER_CONFIG changes any of them (and writes them all to that file).  Most are mapped onto
rocketstore's own BrokerConfig / StoreConfig; the rest (thread pool sizes and queue capacities, netty buffer
and semaphore settings, the DLedger, LMQ and consume-queue-ext switches, the clean-up pacing intervals such as
deleteCommitLogFilesInterval or destroyMapedFileIntervalForcibly, the bloom filter settings such as
enableCalcFilterBitMap or filterDataCleanTimeSpan, ...) are listed in :data:`KEPT_PROPERTIES` with their
Java kind and 4.9.3's default: the broker shows them, takes new values for them and writes them, and acts on
none of them but the few in :data:`KEPT_AND_READ` (this broker has no thread pools, no netty, no DLedger and a
clean-up of its own pacing); the ones a start file gives are named in one warning when the broker starts.

:func:`java_value` (message.java_numbers, shared with the name server) is 4.9.3's MixAll.properties2Object
for one value: the text a setter of that kind takes, else None (4.9.3 then leaves the property as it was).
:func:`delete_when_notice` names the parts of a deleteWhen that are no hour;
:func:`commitlog_paths_error` refuses 4.9.3's commitlog over several directories,
:func:`commitlog_left_in_java_default` says when a 4.9.3 store's commitlog is where 4.9.3's default put it
and this broker would not look, :func:`dledger_commitlog_error` when it is DLedger's, which this broker does
not read, :func:`new_store_beside_java_default` when a new store starts beside 4.9.3's default one.
"""

from __future__ import annotations

import os

from rocketstore.message.java_numbers import java_value
from rocketstore.remoting.netty_config import NETTY_SERVER_KEPT
from rocketstore.store.cleanup import delete_when_hours
from rocketstore.store.config import JAVA_LONG_PROPERTIES as STORE_JAVA_LONGS
from rocketstore.store.mapped_file import is_segment_name

__all__ = ["FIELDS_WITHOUT_EFFECT", "JAVA_ENUMS", "JAVA_LONGS", "KEPT_AND_READ", "KEPT_PROPERTIES", "ROCKETSTORE_ONLY",
           "SETTER_NAMES", "commitlog_left_in_java_default", "commitlog_paths_error", "delete_when_notice",
           "dledger_commitlog_error", "java_value", "kept_defaults", "new_store_beside_java_default"]

#: name -> (Java kind: int, long, bool or str; 4.9.3's default as text, None where it has none or depends on
#: the host: see :func:`kept_defaults`)
KEPT_PROPERTIES: dict[str, tuple[str, str | None]] = {
    # BrokerConfig
    "messageStorePlugIn": ("str", ""),
    "sendMessageThreadPoolNums": ("int", None),
    "putMessageFutureThreadPoolNums": ("int", None),
    "pullMessageThreadPoolNums": ("int", None),
    "processReplyMessageThreadPoolNums": ("int", None),
    "queryMessageThreadPoolNums": ("int", None),
    "adminBrokerThreadPoolNums": ("int", "16"),
    "clientManageThreadPoolNums": ("int", "32"),
    "consumerManageThreadPoolNums": ("int", "32"),
    "heartbeatThreadPoolNums": ("int", None),
    "endTransactionThreadPoolNums": ("int", None),
    "flushConsumerOffsetHistoryInterval": ("int", "60000"),
    "fetchNamesrvAddrByAddressServer": ("bool", "false"),
    # (BrokerStartup's keys, not BrokerConfig's: the address server read with fetchNamesrvAddrByAddressServer)
    "rmqAddressServerDomain": ("str", None),
    "rmqAddressServerSubGroup": ("str", None),
    "sendThreadPoolQueueCapacity": ("int", "10000"),
    "putThreadPoolQueueCapacity": ("int", "10000"),
    "pullThreadPoolQueueCapacity": ("int", "100000"),
    "replyThreadPoolQueueCapacity": ("int", "10000"),
    "queryThreadPoolQueueCapacity": ("int", "20000"),
    "clientManagerThreadPoolQueueCapacity": ("int", "1000000"),
    "consumerManagerThreadPoolQueueCapacity": ("int", "1000000"),
    "heartbeatThreadPoolQueueCapacity": ("int", "50000"),
    "endTransactionPoolQueueCapacity": ("int", "100000"),
    "filterServerNums": ("int", "0"),
    "highSpeedMode": ("bool", "false"),
    "commercialEnable": ("bool", "true"),
    "commercialTimerCount": ("int", "1"),
    "commercialTransCount": ("int", "1"),
    "commercialBigCount": ("int", "1"),
    "commercialBaseCount": ("int", "1"),
    "transferMsgByHeap": ("bool", "true"),
    "maxDelayTime": ("int", "40"),
    "disableConsumeIfConsumerReadSlowly": ("bool", "false"),
    "consumerFallbehindThreshold": ("long", str(16 << 30)),
    "brokerFastFailureEnable": ("bool", "true"),
    "waitTimeMillsInSendQueue": ("long", "200"),
    "waitTimeMillsInPullQueue": ("long", "5000"),
    "waitTimeMillsInHeartbeatQueue": ("long", "31000"),
    "waitTimeMillsInTransactionQueue": ("long", "3000"),
    "startAcceptSendRequestTimeStamp": ("long", "0"),
    "enableCalcFilterBitMap": ("bool", "false"),
    "expectConsumerNumUseFilter": ("int", "32"),
    "maxErrorRateOfBloomFilter": ("int", "20"),
    "filterDataCleanTimeSpan": ("long", str(24 * 3600 * 1000)),
    "forceRegister": ("bool", "true"),
    "enableDetailStat": ("bool", "true"),
    "autoDeleteUnusedStats": ("bool", "false"),  # read where topics and groups are deleted (Broker)
    "isolateLogEnable": ("bool", "false"),
    # NettyServerConfig (and NettyClientConfig's writeBufferHighWaterMark / writeBufferLowWaterMark)
    **NETTY_SERVER_KEPT,
    # NettyClientConfig
    "clientWorkerThreads": ("int", "4"),
    "clientCallbackExecutorThreads": ("int", None),
    "clientOnewaySemaphoreValue": ("int", "65535"),
    "clientAsyncSemaphoreValue": ("int", "65535"),
    "connectTimeoutMillis": ("int", "3000"),
    "channelNotActiveInterval": ("long", "60000"),
    "clientChannelMaxIdleTimeSeconds": ("int", "120"),
    "clientSocketSndBufSize": ("int", "0"),
    "clientSocketRcvBufSize": ("int", "0"),
    "clientPooledByteBufAllocatorEnable": ("bool", "false"),
    "clientCloseSocketIfTimeout": ("bool", "true"),
    "useTLS": ("bool", None),
    # MessageStoreConfig
    "readOnlyCommitLogStorePaths": ("str", None),
    "enableConsumeQueueExt": ("bool", "false"),
    "mappedFileSizeConsumeQueueExt": ("int", str(48 << 20)),
    # the bit count of the consumers' bloom filter (maxErrorRateOfBloomFilter 20, expectConsumerNumUseFilter
    # 32), which 4.9.3's broker sets at start over the field's 64 (broker.stats_admin.start_file_extras)
    "bitMapLengthConsumeQueueExt": ("int", "112"),
    "commitIntervalCommitLog": ("int", "200"),
    "useReentrantLockWhenPutMessage": ("bool", "true"),
    "deleteCommitLogFilesInterval": ("int", "100"),
    "deleteConsumeQueueFilesInterval": ("int", "100"),
    "destroyMapedFileIntervalForcibly": ("int", "120000"),
    "redeleteHangedFileInterval": ("int", "120000"),
    "putMsgIndexHightWater": ("int", "600000"),
    "commitCommitLogLeastPages": ("int", "4"),
    "flushLeastPagesWhenWarmMapedFile": ("int", "4096"),
    "commitCommitLogThoroughInterval": ("int", "200"),
    "haSendHeartbeatInterval": ("int", "5000"),  # read by broker.ha at every use, as the three below
    "haHousekeepingInterval": ("int", "20000"),
    "haTransferBatchSize": ("int", str(32 << 10)),
    "haSlaveFallbehindMax": ("int", str(256 << 20)),
    "offsetCheckInSlave": ("bool", "false"),
    "debugLockEnable": ("bool", "false"),
    "duplicationEnable": ("bool", "false"),
    "diskFallRecorded": ("bool", "true"),
    "transientStorePoolEnable": ("bool", "false"),
    "transientStorePoolSize": ("int", "5"),
    "fastFailIfNoBufferInStorePool": ("bool", "false"),
    "enableDLegerCommitLog": ("bool", "false"),
    "dLegerGroup": ("str", None),
    "dLegerPeers": ("str", None),
    "dLegerSelfId": ("str", None),
    "preferredLeaderId": ("str", None),
    "isEnableBatchPush": ("bool", "false"),
    "enableScheduleMessageStats": ("bool", "true"),
    "enableLmq": ("bool", "false"),
    "enableMultiDispatch": ("bool", "false"),
    "maxLmqConsumeQueueNum": ("int", "20000"),
    "enableScheduleAsyncDeliver": ("bool", "false"),
    "scheduleAsyncDeliverMaxPendingLimit": ("int", "2000"),
    "scheduleAsyncDeliverMaxResendNum2Blocked": ("int", "3"),
}

#: kept properties the broker does read: fetchNamesrvAddrByAddressServer and the address server it names
#: (broker.broker), autoDeleteUnusedStats (a deleted topic's statistics go with it),
#: the bloom filter sizes QUERY_CONSUME_QUEUE's filterData shows and the replication settings (broker.ha); the
#: others in :data:`KEPT_PROPERTIES` act on nothing
KEPT_AND_READ = frozenset({"fetchNamesrvAddrByAddressServer", "rmqAddressServerDomain",
                           "rmqAddressServerSubGroup", "autoDeleteUnusedStats", "maxErrorRateOfBloomFilter",
                           "expectConsumerNumUseFilter",
                           "haSendHeartbeatInterval", "haHousekeepingInterval", "haTransferBatchSize",
                           "haSlaveFallbehindMax"})

#: rocketstore's own properties taken from a broker.conf that act on nothing here, with why (named in the
#: broker's start-up warning with the kept ones)
FIELDS_WITHOUT_EFFECT = {
    # 4.9.3's default (true) sleeps flushIntervalCommitLog between flushes; false lets every put wake the
    # flusher, a per-put cost this broker does not take: its flush is always timed
    "flushCommitLogTimed": "the commitlog flush always runs every flushIntervalCommitLog, 4.9.3's default",
}

#: the name an update uses where 4.9.3's setter is not named after the field (the field isEnableBatchPush has
#: the setter setEnableBatchPush: the update names enableBatchPush, GET_BROKER_CONFIG shows isEnableBatchPush)
SETTER_NAMES = {"enableBatchPush": "isEnableBatchPush"}

#: rocketstore's own properties whose 4.9.3 field is a long (the others it has are Java ints)
JAVA_LONGS = frozenset({"brokerId", "shortPollingTimeMills", "transactionTimeOut",
                        "transactionCheckInterval"}) | STORE_JAVA_LONGS

#: rocketstore's own properties, which 4.9.3 does not have
ROCKETSTORE_ONLY = frozenset({"busyPollMicros", "channelExpiredTimeout", "listenHost", "storeHost",
                              "preallocateCommitLog", "warmAheadBytes"})

#: enum properties (4.9.3's setters take the constant's exact name and leave the property as it was otherwise)
JAVA_ENUMS = {"flushDiskType": frozenset({"ASYNC_FLUSH", "SYNC_FLUSH"}),
              "brokerRole": frozenset({"ASYNC_MASTER", "SYNC_MASTER", "SLAVE"})}


def kept_defaults(*, use_tls: bool) -> dict[str, str]:
    """4.9.3's default of every property in :data:`KEPT_PROPERTIES` that has one on this host: the thread
    pool sizes follow the CPU count as 4.9.3's do; useTLS is *use_tls* (4.9.3 sets it from tls.enable)."""
    cpus = os.cpu_count() or 1
    send_threads = min(cpus, 4)
    computed = {
        "sendMessageThreadPoolNums": send_threads,
        "putMessageFutureThreadPoolNums": min(cpus, 4),
        "pullMessageThreadPoolNums": 16 + cpus * 2,
        "processReplyMessageThreadPoolNums": 16 + cpus * 2,
        "queryMessageThreadPoolNums": 8 + cpus,
        "heartbeatThreadPoolNums": min(32, cpus),
        "endTransactionThreadPoolNums": max(8 + cpus * 2, send_threads * 4),
        "clientCallbackExecutorThreads": cpus,
    }
    defaults = {name: default for name, (_, default) in KEPT_PROPERTIES.items() if default is not None}
    defaults.update({name: str(value) for name, value in computed.items()})
    defaults["useTLS"] = "true" if use_tls else "false"
    return defaults


def _segment_count(directory: str) -> int:
    try:
        return sum(1 for name in os.listdir(directory) if is_segment_name(name))
    except OSError:
        return 0


def _has_entries(directory: str) -> bool:
    try:
        return bool(os.listdir(directory))
    except OSError:
        return False


def new_store_beside_java_default(store_path_root_dir: str, store_path_commit_log: str | None,
                                  home: str | None = None) -> str | None:
    """The start's warning when this broker starts a new store (no consume queue, no topics.json, and no
    commitlog segment unless storePathCommitLog puts the commitlog elsewhere) while 4.9.3's default
    storePathRootDir, ``<user.home>/store``, holds a store, or None.  A 4.9.3 broker.conf that sets no
    storePathRootDir (the distribution's sets no store path) keeps its consume queues, topics and consumer
    offsets there, and its commitlog too unless storePathCommitLog says otherwise; ``rocketstore broker -c``
    with the same file opens ``./store`` instead, and the broker started without a word about what it left
    behind (*home*: the user's home directory, ``~``)."""
    java_root = os.path.join(home if home is not None else os.path.expanduser("~"), "store")
    own_commitlog = (not store_path_commit_log
                     and _segment_count(os.path.join(store_path_root_dir, "commitlog")))
    if (os.path.realpath(store_path_root_dir) == os.path.realpath(java_root) or own_commitlog
            or _has_entries(os.path.join(store_path_root_dir, "consumequeue"))
            or os.path.exists(os.path.join(store_path_root_dir, "config", "topics.json"))):
        return None
    held = []
    segments = _segment_count(os.path.join(java_root, "commitlog"))
    if segments:
        held.append(f"a commitlog of {segments} segment(s)")
    if _has_entries(os.path.join(java_root, "consumequeue")):
        held.append("consume queues")
    if os.path.exists(os.path.join(java_root, "config", "topics.json")):
        held.append("topics and consumer offsets (config)")
    if not held:
        return None
    return (f"the store {store_path_root_dir} is new, while {java_root} (4.9.3's storePathRootDir when its "
            f"broker.conf sets none) holds {', '.join(held)}: if that is the store to take over, set "
            f"storePathRootDir={java_root} (or --store {java_root})")


def commitlog_left_in_java_default(store_path_root_dir: str, store_path_commit_log: str | None,
                                   home: str | None = None) -> str | None:
    """Why a broker must not open the store of *store_path_root_dir*, or None.

    4.9.3's storePathCommitLog defaults to ``<user.home>/store/commitlog`` whatever storePathRootDir says;
    this broker's to ``<storePathRootDir>/commitlog``.  A 4.9.3 broker.conf that sets storePathRootDir alone
    left its commitlog in the home directory and its consume queues under storePathRootDir: opened here
    with the same file, the store found no commitlog and dropped every consume-queue entry (the messages
    gone from the consumers' view, the queues' files deleted).  So: storePathCommitLog not set, consume
    queues under storePathRootDir, no commitlog segment beside them and segments in 4.9.3's default place:
    the text of the error naming the property to set (*home*: the user's home directory, ``~``)."""
    if store_path_commit_log:
        return None
    ours = os.path.join(store_path_root_dir, "commitlog")
    java = os.path.join(home if home is not None else os.path.expanduser("~"), "store", "commitlog")
    if (os.path.realpath(ours) == os.path.realpath(java) or _segment_count(ours)
            or not _has_entries(os.path.join(store_path_root_dir, "consumequeue"))):
        return None
    segments = _segment_count(java)
    if not segments:
        return None
    return (f"storePathCommitLog is not set: this broker reads the commitlog from {ours}, which holds no "
            f"segment, though the consume queues beside it point into one; 4.9.3 started with the same "
            f"file keeps its commitlog in {java} (its default, whatever storePathRootDir says), which holds "
            f"{segments} segment(s): set storePathCommitLog={java} (the store was not opened: opening it "
            f"without its commitlog drops every consume-queue entry)")


def dledger_commitlog_error(enabled: bool, self_id: str | None, store_path_root_dir: str) -> str | None:
    """Why a broker started with enableDLegerCommitLog=true must not open its store, or None.

    4.9.3 with enableDLegerCommitLog=true writes every message after the switch to DLedger's log,
    ``<storePathRootDir>/dledger-<dLegerSelfId>/data``, each wrapped in a DLedger entry header, and its
    consume queues point into those files; its commitlog directory keeps the messages from before the switch
    only.  This broker has no DLedger and reads no such file: it would find the consume queues pointing past
    its commitlog and drop their entries (the messages gone from the consumers' view) and write new ones
    over offsets DLedger holds.  So: the flag on and a DLedger log there holding an entry: the text of the
    error naming the key.  A DLedger log not yet written loses nothing (4.9.3 takes a plain commitlog as the
    one before its switch)."""
    if not enabled:
        return None
    try:
        names = ([f"dledger-{self_id.strip()}"] if self_id and self_id.strip()
                 else sorted(n for n in os.listdir(store_path_root_dir) if n.startswith("dledger-")))
    except OSError:
        return None
    for name in names:
        data = os.path.join(store_path_root_dir, name, "data")
        try:
            segments = sorted(filter(is_segment_name, os.listdir(data)))
            if not segments:
                continue
            with open(os.path.join(data, segments[0]), "rb") as f:
                written = f.read(4) not in (b"", b"\0\0\0\0")  # a first entry's magic code
        except OSError:
            continue
        if written:
            return (f"enableDLegerCommitLog=true: {data} holds a DLedger commitlog ({len(segments)} "
                    f"segment(s)), which this broker cannot read (no DLedger here: each message there is "
                    f"wrapped in a DLedger entry); opened, its consume-queue entries would be dropped and "
                    f"new messages written over its offsets (the store was not opened)")
    return None


def delete_when_notice(delete_when: str) -> str | None:
    """The start's warning about a deleteWhen whose parts are not all hours of the day ("4am", "25", ""), or
    None.  Such a part never matches: files past fileReservedTime are deleted at the other hours only, or
    for space.  (4.9.3 reads the parts in order with Integer.parseInt at every clean-up pass: one that is no
    number, reached before an hour that matches, fails the pass, and its store.log repeats the exception every
    10 s; a number that is no hour never matches.)  The parts are read by the store's own rule
    (cleanup.delete_when_hours): trailing empty parts dropped, as Java's String.split drops them."""
    hours, bad = delete_when_hours(delete_when)  # what the store's cleaner reads, the one rule
    if not bad:
        return None
    when = ("are deleted only at the other hours it names" if hours
            else "are not deleted for their age, only for disk space")
    what = "is no hour" if len(bad) == 1 else "are no hours"
    return (f"deleteWhen={delete_when}: {', '.join(map(repr, bad))} {what} of the day (0 .. 23, apart by ';'): "
            f"files past fileReservedTime {when}")


def commitlog_paths_error(store_path_commit_log: str | None) -> str | None:
    """Why a broker must not open a storePathCommitLog that names several directories, or None.

    4.9.3 reads a storePathCommitLog with commas as several directories and spreads the commitlog's segments
    over them in turn (its MultiPathMappedFileQueue); this broker keeps the commitlog in one directory, and
    took the whole text for one directory's name: a new directory named ``a,b`` held the commitlog, and a
    4.9.3 store opened with its own file found no commitlog there and dropped every consume-queue entry."""
    if not store_path_commit_log or "," not in str(store_path_commit_log):
        return None
    return (f"storePathCommitLog={store_path_commit_log} is a list of directories, as 4.9.3 reads a value "
            f"with commas (it spreads the commitlog's segments over them): this broker keeps the commitlog "
            f"in one directory; name one (moving the segment files of a 4.9.3 store from the others into it "
            f"keeps its messages)")
