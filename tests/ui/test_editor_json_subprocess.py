"""Opening a JSON file in the editor must not crash (tree-sitter 0.26 crashed the process on JSON queries).

Run in a subprocess, so a crash in the highlighter cannot take pytest down with it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from tui.paths import sample_configs_dir

_SCRIPT = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    from textual.widgets import TextArea
    from tui.ui.editor_app import EditorApp

    def styles_of(raw: TextArea) -> set[str]:
        return {str(segment.style) for segment in raw.render_line(1) if segment.text.strip()}

    async def until(pilot, condition) -> None:  # the hang guard is 60 s: a busy machine is slow
        for _ in range(1200):
            if condition():
                return
            await pilot.pause(0.05)

    async def main() -> None:
        app = EditorApp(Path(sys.argv[1]))
        async with app.run_test(size=(80, 24)) as pilot:
            await until(pilot, lambda: getattr(app.screen, "loaded", False))
            await pilot.press("f3")
            raw = app.screen.query_one("#raw", TextArea)
            await until(pilot, lambda: raw.has_focus and len(styles_of(raw)) >= 2)  # shown, highlighted
            print("RENDERED", raw.language, len(raw.text), len(styles_of(raw)))

    asyncio.run(main())
    """
)


def test_json_file_opens_and_renders_with_highlighting(tmp_path: Path) -> None:
    target = tmp_path / "settings.json"
    shutil.copy(sample_configs_dir() / "sglang_settings.json", target)
    repo = Path(__file__).resolve().parents[2]
    result = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(target)], cwd=repo, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
    line = next(line for line in result.stdout.splitlines() if line.startswith("RENDERED"))
    _, language, length, styles = line.split()
    assert language == "json"
    assert int(length) == len(target.read_text())
    assert int(styles) >= 2  # key and value highlighted differently
