"""Where the config editor keeps unsaved edits when it fails: beside the file, else the data folder."""

from __future__ import annotations

from pathlib import Path

from tui.configs.atomic import write_file
from tui.paths import user_data_dir

RECOVERY_SUFFIX = ".spectop-recovery"


def recovery_path(path: Path) -> Path:
    """Where unsaved edits of `path` go when the editor fails: `FILE.spectop-recovery` beside it."""
    return path.with_name(path.name + RECOVERY_SUFFIX)


def fallback_recovery_path(path: Path) -> Path:
    """When the file's folder is not writable: `$XDG_DATA_HOME/spectop/recovery/FILE.spectop-recovery`."""
    return user_data_dir() / "recovery" / (path.name + RECOVERY_SUFFIX)


def write_recovery(path: Path, text: str) -> str:
    """Write `text` (unsaved edits of `path`) beside it, else in the recovery folder; a note saying where."""
    problems = []
    for target in (recovery_path(path), fallback_recovery_path(path)):
        try:
            write_file(target, text)  # synchronous on purpose: the app is going down
        except OSError as error:
            problems.append(f"{target}: {error.strerror or error}")
            continue
        return (
            f"spectop: the editor failed; your unsaved edits of {path} were saved to {target} "
            f"(compare: diff {path} {target})"
        )
    return f"spectop: the editor failed and the unsaved edits could not be saved ({'; '.join(problems)})"
