"""The tune tests' restart command: the demo's `restart NAME` without importing spectop."""

from __future__ import annotations

import socket
import sys


def restart(control: str, name: str) -> int:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.connect(control)
        connection.sendall(f"restart {name}\n".encode())
        last = ""
        for raw in connection.makefile("rb"):
            last = raw.decode("utf-8", "replace").rstrip("\n")
            if last not in ("ok", "failed"):
                print(last, flush=True)
    return 0 if last == "ok" else 1


if __name__ == "__main__":
    raise SystemExit(restart(sys.argv[1], sys.argv[2]))
