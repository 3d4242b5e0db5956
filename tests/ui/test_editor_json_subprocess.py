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
    from tui.editor_app import EditorApp

    async def main() -> None:
        app = EditorApp(Path(sys.argv[1]))
        async with app.run_test(size=(80, 24)) as pilot:
            for _ in range(200):
                if getattr(app.screen, "loaded", False):
                    break
                await pilot.pause(0.02)
            await pilot.press("f3")
            await pilot.pause(0.2)
            raw = app.screen.query_one("#raw", TextArea)
            styles = {str(segment.style) for segment in raw.render_line(1) if segment.text.strip()}
            print("RENDERED", raw.language, len(raw.text), len(styles))

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
