"""``rocketstore store dump|verify|recover DIR``: inspect, check and recover a store directory.

``dump`` and ``verify`` open the store read-only (scratch mode: recovery and dispatch happen in private
memory), so they never change DIR, even when it belongs to a running or crashed broker.  ``recover`` opens
it for writing, which runs recovery for real and closes cleanly.

Geometry: RocketMQ's defaults unless given by flags or a broker.conf (``-c``); when neither names a
segment size, the commitlog and consume-queue sizes are read off the files (the most common size among
the segments of the commitlog, of the first consume queue).  Index files
cannot reveal their slot and entry counts, so a mismatch with the given (or default) counts is an error
that names both sizes.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import stat
import sys
from typing import Any, TextIO

from rocketstore.config_json import config_table, read_json_file, topic_config_entry
from rocketstore.errors import CorruptFileError, StoreConfigError
from rocketstore.store.config import StoreConfig, read_properties_file
from rocketstore.store.dump import dump_store
from rocketstore.store.mapped_file import is_segment_name
from rocketstore.store.message_store import MessageStore
from rocketstore.store.recovery import RecoveryReport
from rocketstore.store.snapshot import check_store_root, consume_queue_bytes_on_disk, segment_bytes_on_disk
from rocketstore.store.verify import VerifyReport, verify_store

__all__ = ["PhaseProgress", "ProgressBar", "format_verify_report", "register", "store_config_from_args"]

_GEOMETRY_PROPERTIES = {
    "segment_bytes": "mappedFileSizeCommitLog",
    "cq_bytes": "mappedFileSizeConsumeQueue",
    "index_slots": "maxHashSlotNum",
    "index_entries": "maxIndexNum",
}


# --- configuration ------------------------------------------------------------------------------------


def _check_index_geometry(config: StoreConfig, *, writing: bool = False) -> None:
    """A StoreConfigError for an index file of another size than *config*'s geometry gives (``writing``: the
    message of a command that would write index files of that geometry in their place)."""
    directory = config.index_dir
    if not os.path.isdir(directory):
        return
    expected = config.index_file_bytes
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        if not name.isdigit() or not os.path.isfile(path):
            continue
        actual = os.path.getsize(path)
        if actual == expected:
            continue
        if writing:
            raise StoreConfigError(
                f"index file {path} has {actual} bytes, but the rebuild would write index files of "
                f"{expected} bytes (maxHashSlotNum={config.max_hash_slot_num}, maxIndexNum="
                f"{config.max_index_num}: 40 + slots x 4 + entries x 20), which the store's broker would "
                f"refuse to open; pass --index-slots and --index-entries (or -c broker.conf) with the "
                f"geometry the store's broker uses")
        raise StoreConfigError(
            f"index file {path} has {actual} bytes, but maxHashSlotNum={config.max_hash_slot_num} and "
            f"maxIndexNum={config.max_index_num} make index files of {expected} bytes "
            f"(40 + slots x 4 + entries x 20); pass --index-slots and --index-entries (or -c broker.conf) "
            f"with the geometry this store was written with")


def store_config_from_args(args: argparse.Namespace, *, check_index: bool = True,
                           check_rebuild_index: bool = False) -> StoreConfig:
    """The StoreConfig for ``args.directory``: flags, then ``-c`` broker.conf, then detection, then defaults.
    ``check_index``: index files of another size than the geometry gives are refused.
    ``check_rebuild_index`` (a command that writes index files): refused too, unless the geometry was
    given (a flag, or maxHashSlotNum / maxIndexNum in broker.conf): then it writes what it was told."""
    directory = os.path.abspath(args.directory)
    if not os.path.isdir(directory):
        raise StoreConfigError(f"{args.directory} is not a directory")
    check_store_root(directory, args.directory)
    props: dict[str, str] = {}
    if args.broker_conf:
        try:
            props = read_properties_file(args.broker_conf)
        except OSError as exc:
            raise StoreConfigError(f"cannot read {args.broker_conf}: {exc}") from exc
    # DIR is the store: its commitlog is DIR/commitlog whatever storePathCommitLog says.
    props = {k: v for k, v in props.items() if k not in ("storePathRootDir", "storePathCommitLog")}
    flags = {attr: getattr(args, attr) for attr in _GEOMETRY_PROPERTIES if getattr(args, attr) is not None}
    config = StoreConfig.from_properties(props, store_path_root_dir=directory, store_path_commit_log=None)
    changes: dict[str, object] = {}
    if "segment_bytes" in flags:
        changes["mapped_file_size_commit_log"] = flags["segment_bytes"]
    elif "mappedFileSizeCommitLog" not in props:
        detected = segment_bytes_on_disk(config.commit_log_dir)
        if detected is not None:
            changes["mapped_file_size_commit_log"] = detected
    if "cq_bytes" in flags:
        changes["mapped_file_size_consume_queue"] = flags["cq_bytes"]
    elif "mappedFileSizeConsumeQueue" not in props:
        detected = consume_queue_bytes_on_disk(config.consume_queue_dir)
        if detected is not None:
            changes["mapped_file_size_consume_queue"] = detected
    if "index_slots" in flags:
        changes["max_hash_slot_num"] = flags["index_slots"]
    if "index_entries" in flags:
        changes["max_index_num"] = flags["index_entries"]
    if changes:
        config = config.replace(**changes)
    if check_index and config.message_index_enable:
        _check_index_geometry(config)
    elif check_rebuild_index and config.message_index_enable:
        given = {"index_slots", "index_entries"} & flags.keys() or \
            {"maxHashSlotNum", "maxIndexNum"} & props.keys()
        if not given:
            _check_index_geometry(config, writing=True)
    return config


# --- sub-commands ----------------------------------------------------------------------------------------


def _write_text(text: str, output: str | None) -> None:
    if output:
        with open(output, "w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)


def run_dump(args: argparse.Namespace) -> int:
    config = store_config_from_args(args)
    if args.output:  # checked before a dump that may take minutes, not after
        parent = os.path.dirname(os.path.abspath(args.output))
        if os.path.isdir(args.output):
            raise StoreConfigError(f"--output {args.output} is a directory: give the dump's file name")
        if not os.path.isdir(parent):
            raise StoreConfigError(f"--output {args.output}: no directory {parent} to write the dump in")
    bar = PhaseProgress(sys.stderr, "dump")
    try:
        with MessageStore.open(config.store_path_root_dir, config, read_only=True) as store:
            dump = dump_store(store, progress=bar)
    finally:
        bar.finish()
    _write_text(json.dumps(dump, indent=1, ensure_ascii=False) + "\n", args.output)
    damaged = sum("error" in m for t in dump["topics"] for q in t["queues"] for m in q["messages"])
    if damaged:
        print(f"rocketstore: warning: {damaged} message(s) did not decode (listed with an \"error\"); "
              f"`rocketstore store verify` says what is damaged", file=sys.stderr)
    return 0


def _recovery_lines(abnormal: bool, start_segment: int, valid_end: int, truncated_bytes: int,
                    records_checked: int, reason: str | None) -> list[str]:
    shutdown = "abnormal (abort file present): full re-dispatch" if abnormal else "clean: tail check"
    return [
        f"  last shutdown:    {shutdown}",
        f"  scan started at:  segment {start_segment}, {records_checked} records checked",
        f"  valid end:        {valid_end}",
        f"  bytes cut:        {truncated_bytes}",
        f"  stopped because:  {reason or '-'}",
    ]


def format_verify_report(directory: str, report: VerifyReport) -> str:
    p = report.recovery_preview
    lines = [
        f"store {directory}",
        (f"  commitlog:        [{report.commit_log_min_offset}, {report.commit_log_max_offset}), "
         f"{report.record_count} records, {report.blank_count} end-of-file blanks"),
        f"  consume queues:   {report.queue_count} queues, {report.cq_entry_count} entries checked",
        *_deleted_topics_lines(report.deleted_topic_records),
        "  index:            " + (f"{report.index_key_count} keys checked" if report.index_checked
                                  else "disabled, not checked"),
        "recovery at open (nothing written to disk):",
        *_recovery_lines(p.abnormal, p.start_segment, p.valid_end, p.truncated_bytes, p.records_checked, p.reason),
        *_not_utf8_lines(report.properties_not_utf8, report.properties_not_utf8_offsets),
    ]
    if report.ok:
        lines.append("OK: commitlog, consume queues and index agree")
    else:
        lines.append(f"PROBLEMS: {report.problem_count}")
        lines.extend(f"  {problem}" for problem in report.problems)
        if report.problem_count > len(report.problems):
            lines.append(f"  ... and {report.problem_count - len(report.problems)} more")
        lines.append("by kind: " + ", ".join(f"{k} {n}" for k, n in sorted(report.counts_by_kind.items())))
    return "\n".join(lines) + "\n"


def _not_utf8_lines(count: int, offsets: tuple[int, ...]) -> list[str]:
    if not count:
        return []
    shown = ", ".join(str(o) for o in offsets) + (" ..." if count > len(offsets) else "")
    # a warning, not a problem: a 4.9.3 batch stores its entries' properties as sent, and 4.9.3 reads them so
    return [f"warning: {count} record(s) with properties that are not UTF-8 (commitlog {shown}): read as 4.9.3 "
            f"reads them, U+FFFD for each malformed sequence (a 4.9.3 batch stores its entries' properties as "
            f"sent)"]


def _deleted_topics_lines(deleted: dict[str, int]) -> list[str]:
    if not deleted:
        return []
    names = sorted(deleted)
    shown = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
    # not problems: 4.9.3 leaves a deleted topic's records in the commitlog until retention
    return [f"  deleted topics:   {sum(deleted.values())} records of {shown} left in the commitlog until "
            f"retention (no consume queue: not checked)"]


def _configured_topics(config: StoreConfig) -> frozenset[str] | None:
    """The topics of the broker's topic table (config/topics.json, or its .bak as the broker reads it); None
    for a store without one (an embedded store) or whose file cannot be read, which verify then takes as a
    store whose topics it does not know."""
    path = os.path.join(config.config_dir, "topics.json")
    try:
        configs = read_json_file(path, lambda obj: config_table(obj, "topicConfigTable", topic_config_entry))
    except (OSError, CorruptFileError) as exc:
        print(f"rocketstore: warning: cannot read {path} ({exc}): the records of deleted topics are "
              f"reported as problems", file=sys.stderr)
        return None
    return frozenset(tc.topic_name for tc in configs) if configs is not None else None


def run_verify(args: argparse.Namespace) -> int:
    config = store_config_from_args(args)
    topics = _configured_topics(config)
    bar = PhaseProgress(sys.stderr, "verify")
    try:
        with MessageStore.open(config.store_path_root_dir, config, read_only=True) as store:
            report = verify_store(store, max_problems=args.max_problems, progress=bar, configured_topics=topics)
    finally:
        bar.finish()
    if args.json:
        data: dict[str, Any] = dataclasses.asdict(report)
        data["ok"] = report.ok
        text = json.dumps(data, indent=1, ensure_ascii=False) + "\n"
    else:
        text = format_verify_report(config.store_path_root_dir, report)
    sys.stdout.write(text)
    return 0 if report.ok else 1


class ProgressBar:
    """A one-line text progress bar, fed the bytes scanned per commitlog segment.

    Redrawn in place (``\\r``) only on a terminal; written to a file or a pipe it prints just the final
    line, so a log does not collect every frame on one line."""

    def __init__(self, total_bytes: int, stream: TextIO, label: str = "recovery", width: int = 30) -> None:
        self.total_bytes = max(total_bytes, 1)
        self.done_bytes = 0
        self.stream = stream
        self.label = label
        self.width = width
        self._last = ""
        try:
            self.live = bool(stream.isatty())
        except (AttributeError, ValueError):  # no isatty, or a closed stream
            self.live = False

    def __call__(self, scanned_bytes: int) -> None:
        self.done_bytes += scanned_bytes
        if self.live:
            self._render()

    def _text(self) -> str:
        fraction = min(1.0, self.done_bytes / self.total_bytes) if self.total_bytes > 0 else 1.0
        filled = int(fraction * self.width)
        return (f"{self.label} [{'#' * filled}{'.' * (self.width - filled)}] "
                f"{self.done_bytes / 1048576:.1f} of {self.total_bytes / 1048576:.1f} MiB scanned")

    def _render(self) -> None:
        text = "\r" + self._text()
        if text != self._last:
            self.stream.write(text)
            self.stream.flush()
            self._last = text

    def finish(self) -> None:
        # the work is done: the bar ends full.  The total was every segment on disk, but a clean shutdown's
        # recovery scans only the last ones (and a preallocated segment past the end is never read), so the
        # last frame would otherwise stop short of full, followed by "done"
        self.total_bytes = self.done_bytes
        if self.live:
            self._render()
        else:
            self.stream.write(self._text())
        self.stream.write(" done\n")
        self.stream.flush()


class PhaseProgress:
    """Progress of a job in phases (``verify`` and ``dump``: the commitlog walk, then queues and index keys),
    fed ``(phase, done, total)``; the commitlog phase counts bytes, the others items.

    Drawn in place on a terminal only, and wiped by :meth:`finish` so the report starts on a clean line;
    to a file or a pipe it writes nothing (the report on stdout is the whole answer)."""

    def __init__(self, stream: TextIO, label: str, width: int = 30) -> None:
        self.stream = stream
        self.label = label
        self.width = width
        self._last = self._shown = ""  # the last frame's text, and as drawn (padded)
        try:
            self.live = bool(stream.isatty())
        except (AttributeError, ValueError):  # no isatty, or a closed stream
            self.live = False

    def __call__(self, phase: str, done: int, total: int) -> None:
        if not self.live:
            return
        fraction = min(1.0, done / total) if total > 0 else 1.0
        filled = int(fraction * self.width)
        if phase == "commitlog":
            amount = f"{done / 1048576:.1f} of {total / 1048576:.1f} MiB"
        else:
            amount = f"{done} of {total}"
        text = f"{self.label}: {phase} [{'#' * filled}{'.' * (self.width - filled)}] {amount}"
        if text != self._last:
            frame = text.ljust(len(self._shown))  # covers what is left of a longer frame
            self.stream.write("\r" + frame)
            self.stream.flush()
            self._last, self._shown = text, frame

    def finish(self) -> None:
        if self._shown:
            self.stream.write("\r" + " " * len(self._shown) + "\r")
            self.stream.flush()
            self._last = self._shown = ""


def _refuse_read_only_tree(root: str) -> None:
    """Recovery writes in place: refuse a tree whose permission bits say read-only.

    os.access is not enough: it answers yes to root, and a root shell would then rewrite a store that was
    made read-only on purpose (a golden reference, an evidence copy).
    """
    for dirpath, _, filenames in os.walk(root):
        for name in [".", *filenames]:
            path = os.path.normpath(os.path.join(dirpath, name))
            if not os.stat(path).st_mode & stat.S_IWUSR:
                raise StoreConfigError(f"{path} is read-only; recover writes in place, so copy the store and "
                                       f"recover the copy (or make the files writable)")


def run_recover(args: argparse.Namespace) -> int:
    config = store_config_from_args(args)
    _refuse_read_only_tree(config.store_path_root_dir)
    commit_log_dir = config.commit_log_dir
    total = 0
    if os.path.isdir(commit_log_dir):
        total = sum(os.path.getsize(os.path.join(commit_log_dir, n)) for n in os.listdir(commit_log_dir)
                    if is_segment_name(n))
    bar = ProgressBar(total, sys.stderr)
    store = MessageStore.open(config.store_path_root_dir, config, read_only=False, background=False,
                              progress=bar)
    try:
        bar.finish()
        report: RecoveryReport = store.recovery
    finally:
        store.close()
    abort_left = os.path.exists(os.path.join(config.store_path_root_dir, "abort"))
    lines = [f"recovered {config.store_path_root_dir}",
             *_recovery_lines(report.abnormal, report.start_segment, report.valid_end, report.truncated_bytes,
                              report.records_checked, report.first_invalid_reason),
             f"  queue entries dropped: {report.dropped_queue_entries} (pointing past the valid end)"]
    if report.dropped_queue_entries and not report.abnormal:
        lines.append("WARNING: the last shutdown was clean, so those entries' records were lost from the commitlog "
                     "(missing or cut segments); the consume queues now end where the commitlog does")
    if abort_left:
        lines.append("NOT closed cleanly: the abort file is still there (dispatch did not catch up or a write "
                     "failed); the next open recovers again")
    else:
        lines.append("closed cleanly: abort file removed")
    sys.stdout.write("\n".join(lines) + "\n")
    return 1 if abort_left else 0


# --- parser -----------------------------------------------------------------------------------------------


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from exc
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{value} is not positive")
    return value


def _geometry_parent() -> argparse.ArgumentParser:
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument("directory", metavar="DIR", help="the store root (holds commitlog/, consumequeue/, ...)")
    geo = parent.add_argument_group(
        "geometry", "flags win over -c; segment sizes not given are read off the files, else RocketMQ's "
                    "defaults")
    geo.add_argument("--segment-bytes", type=_positive_int, metavar="N",
                     help="commitlog segment size (mappedFileSizeCommitLog)")
    geo.add_argument("--cq-bytes", type=_positive_int, metavar="N",
                     help="consume-queue file size (mappedFileSizeConsumeQueue)")
    geo.add_argument("--index-slots", type=_positive_int, metavar="N",
                     help="index hash slots (maxHashSlotNum, default 5000000)")
    geo.add_argument("--index-entries", type=_positive_int, metavar="N",
                     help="index entries (maxIndexNum, default 20000000)")
    geo.add_argument("-c", "--config", dest="broker_conf", metavar="broker.conf",
                     help="read store settings from a broker.conf (its store paths are ignored: DIR is the store)")
    return parent


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``store`` group to the top-level parser."""
    store = subparsers.add_parser("store", help="dump, verify or recover a store directory",
                                  description="Inspect, check and recover a RocketMQ 4.9 store directory.")
    actions = store.add_subparsers(dest="store_command", metavar="ACTION")
    actions.required = True
    parent = _geometry_parent()

    dump = actions.add_parser("dump", parents=[parent], help="print everything the store holds as JSON",
                              description="Open DIR read-only and print its records, queues and index "
                                          "answers as JSON (the layout of the golden reference dumps).")
    dump.add_argument("--output", "-o", metavar="FILE", help="write the JSON to FILE instead of stdout")
    dump.set_defaults(handler=run_dump)

    verify = actions.add_parser("verify", parents=[parent], help="check commitlog, consume queues and index",
                                description="Open DIR read-only and check that commitlog, consume queues and "
                                            "index agree, and what recovery would do to the files "
                                            "(RECOVERY_TRUNCATES: records it would cut; NOT_A_DIRECTORY: a "
                                            "file in place of commitlog/, consumequeue/ or index/). Exit "
                                            "status 1 when a problem is found.")
    verify.add_argument("--json", action="store_true", help="print the report as JSON")
    verify.add_argument("--max-problems", type=_positive_int, default=1000, metavar="N",
                        help="list at most N problems (all are counted; default 1000)")
    verify.set_defaults(handler=run_verify)

    recover = actions.add_parser("recover", parents=[parent], help="run recovery on DIR and close it cleanly",
                                 description="Open DIR for writing, which recovers it (truncating a torn tail, "
                                             "rebuilding consume queues and index), then close it cleanly.")
    recover.set_defaults(handler=run_recover)
