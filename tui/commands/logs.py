"""`spectop logs FILE [--follow] [--from-start] [--json]`: a server log as typed events."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from datetime import datetime
from functools import partial
from pathlib import Path

from tui.commands import fail, say
from tui.telemetry.logs import LogParser
from tui.telemetry.logs.follow import follow_events
from tui.telemetry.logs.render import event_json, event_text
from tui.telemetry.tailer import LogTailer


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "logs",
        help="parse a vLLM / SGLang / llama.cpp log into stats, spec_decode and error events",
        description="Parse a server log (the whole file, or follow it like `tail -F`) into events: "
        "stats, spec_decode and error. One readable line per event, or JSON lines with --json. Events with "
        "impossible figures (a garbled line) are dropped, and so are lines the parser fails on; both counts "
        "go to stderr at the end. llama.cpp "
        "prints only the time since it started: that is `uptime`; `time` is the wall time when known (a "
        "docker/journald prefix, or a line read live with --follow), else unknown.",
    )
    parser.add_argument("file", metavar="FILE", help="the server's log file")
    parser.add_argument(
        "-f", "--follow", action="store_true", help="keep following the file (survives rotation)"
    )
    parser.add_argument(
        "--from-start", action="store_true", help="with --follow: read the existing lines first"
    )
    parser.add_argument(
        "--json", action="store_true", help='one JSON object per event: {"kind", "time", ...}'
    )
    parser.add_argument(
        "--backend",
        choices=("auto", "vllm", "sglang", "llamacpp"),
        default="auto",
        help="log grammar to assume for lines that do not say (default: detect)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    path = Path(args.file)
    if not args.follow and not path.is_file():
        reason = "is a directory" if path.is_dir() else "does not exist"
        return fail("logs", f"{path} {reason}")
    try:
        nul = _first_nul(path) if path.is_file() else None
        if nul is not None:
            return fail(
                "logs", f"{path} is not a text log: it holds binary data (a NUL byte at offset {nul})"
            )
        asyncio.run(_print_events(path, args))
    except KeyboardInterrupt:
        return 0
    except BrokenPipeError:  # `spectop logs big.log | head`: the reader is gone, not the file
        sys.stderr.close()
        return 0
    except OSError as error:  # unreadable file (permissions, I/O error)
        return fail("logs", f"cannot read {path}: {error.strerror or error}")
    return 0


def _first_nul(path: Path) -> int | None:
    """Where the file's first NUL byte is, within its first 8 KiB (as `grep` and `git` tell binary
    files): no text log has one, past the run of NULs a `copytruncate` can leave at its start."""
    with path.open("rb") as file:
        start = file.read(8192)
    offset = start.find(b"\0", len(start) - len(start.lstrip(b"\0")))
    return None if offset < 0 else offset


async def _print_events(path: Path, args: argparse.Namespace) -> None:
    render = event_json if args.json else event_text
    parser = LogParser(None if args.backend == "auto" else args.backend)
    out = sys.stdout
    try:
        if not args.follow:
            async for line in LogTailer(path).read_all():
                for event in parser.feed_guarded(line):
                    out.write(render(event) + "\n")
            for event in parser.flush():
                out.write(render(event) + "\n")
            out.flush()
            return

        # A log that does not exist yet is read from its first line once it appears.
        from_start = args.from_start or not os.path.exists(path)
        # "waiting for FILE to appear", rotations, truncations (like tail -F)
        notice = partial(say, "logs")
        async for _, events in follow_events(path, parser, from_start=from_start, on_notice=notice):
            for event in events:
                # A llama.cpp line read live gets the wall time it was read at (it prints only its uptime).
                if not from_start and event.time is None and getattr(event, "uptime", None) is not None:
                    event.time = datetime.now().astimezone().isoformat(timespec="milliseconds")
                out.write(render(event) + "\n")
            if events:
                out.flush()
    finally:
        if parser.unread:  # events dropped for an impossible figure (garbled lines) are never printed
            noun = "event" if parser.unread == 1 else "events"
            say("logs", f"{parser.unread} {noun} unread (impossible figures in garbled lines)")
        if parser.failed_lines:  # lines the parser raised on (a spectop bug, not the server's)
            noun = "line" if parser.failed_lines == 1 else "lines"
            why = f"the parser failed on them, a spectop bug; last: {parser.last_failure}"
            say("logs", f"{parser.failed_lines} {noun} unreadable ({why})")
