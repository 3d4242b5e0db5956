"""The config core's time per operation on the shipped samples (the editor re-runs these per edit)."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tui.configs.atomic import atomic_write
from tui.configs.document import load_document
from tui.configs.editing import set_raw_value
from tui.configs.launch import render_launch
from tui.configs.lint import lint_document
from tui.paths import sample_configs_dir

CASES = {
    "config.toml": ("speculative", "num_speculative_tokens"),
    "sglang_settings.json": ("speculative_num_steps",),
    "client_settings.json": ("timeout",),
}


def per_call_ms(function: Callable[[], object], repeat: int) -> float:
    started = time.perf_counter()
    for _ in range(repeat):
        function()
    return (time.perf_counter() - started) * 1000.0 / repeat


def main() -> None:
    columns = (("parse", 10), ("set+validate", 14), ("lint", 10), ("launch", 10), ("atomic save", 13))
    print(f"{'file':<24}" + "".join(f"{title:>{width}}" for title, width in columns) + "  (ms/op)")
    with tempfile.TemporaryDirectory() as folder:
        for name, path in CASES.items():
            text = (sample_configs_dir() / name).read_text(encoding="utf-8")
            doc = load_document(text)
            target = Path(folder) / name
            target.write_text(text, encoding="utf-8")
            figures = (
                per_call_ms(lambda text=text: load_document(text), 300),
                per_call_ms(lambda doc=doc, path=path: set_raw_value(doc, path, "3"), 300),
                per_call_ms(lambda doc=doc: lint_document(doc), 300),
                per_call_ms(lambda doc=doc: render_launch(doc.kind, doc.data), 300),
                per_call_ms(lambda target=target, text=text: atomic_write(target, text.encode()), 50),
            )
            cells = (f"{value:>{width}.3f}" for value, (_, width) in zip(figures, columns, strict=True))
            print(f"{name:<24}" + "".join(cells))


if __name__ == "__main__":
    main()
