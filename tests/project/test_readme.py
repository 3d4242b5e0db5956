"""The READMEs point at things that exist: files (the dashboard picture is a snapshot test's own SVG),
anchors, commands; CI runs the Quick start's test command as written."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

from tui import cli

ROOT = Path(__file__).resolve().parents[2]
READMES = [ROOT / "README.md", ROOT / "tests" / "benchmarks" / "README.md"]


def _anchors(markdown: Path) -> set[str]:
    """GitHub's heading ids: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"```.*?```", "", markdown.read_text(encoding="utf-8"), flags=re.DOTALL)
    headings = re.findall(r"^#+\s+(.*)$", text, flags=re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-") for heading in headings}


@pytest.mark.parametrize("readme", READMES, ids=lambda path: str(path.relative_to(ROOT)))
def test_every_relative_link_reaches_a_file_and_its_anchor(readme: Path) -> None:
    links = re.findall(r"\]\(([^)\s]+)\)", readme.read_text(encoding="utf-8"))
    broken = []
    for link in (link for link in links if not link.startswith(("http://", "https://"))):
        file, _, anchor = link.partition("#")
        target = readme.parent / unquote(file) if file else readme
        if not target.is_file() or (anchor and anchor not in _anchors(target)):
            broken.append(link)
    assert links and not broken


def test_the_readme_shows_a_snapshot_of_the_dashboard() -> None:
    pictures = re.findall(r"!\[[^]]*\]\(([^)]+)\)", (ROOT / "README.md").read_text(encoding="utf-8"))
    assert any(unquote(picture).startswith("tests/ui/__snapshots__/") for picture in pictures)


def test_ci_runs_the_quick_start_test_command_verbatim() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quick_start = re.search(r"## Quick start\s+```bash\n(.*?)```", readme, flags=re.DOTALL)
    assert quick_start is not None
    demo, tests = quick_start.group(1).splitlines()
    assert demo.endswith("spectop demo")
    assert tests in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()


def test_every_command_the_readme_names_exists(capsys: pytest.CaptureFixture[str]) -> None:
    named = sorted(set(re.findall(r"`spectop ([a-z]+)\b", (ROOT / "README.md").read_text(encoding="utf-8"))))
    assert len(named) >= 9
    for command in named:
        with pytest.raises(SystemExit) as exited:
            cli.main([command, "--help"])
        assert exited.value.code == 0, command
    capsys.readouterr()
