"""`spectop edit --health-url` checks its URL with the one URL rule (`validators.normalize_http_url`),
in its words, like the settings, `spectop snapshot` and `spectop bench` do."""

from __future__ import annotations

from pathlib import Path

import pytest

from tui.cli import main
from tui.validators import normalize_http_url


@pytest.mark.parametrize("url", ["http://", "ftp://127.0.0.1:8000/health", "http://127.0.0.1:8000/he alth"])
def test_a_bad_health_url_is_refused_in_the_url_rules_words(
    url: str, config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(ValueError) as expected:
        normalize_http_url(url)
    assert main(["edit", str(config), "--health-url", url]) == 2
    assert f"spectop edit: --health-url: {expected.value}" in capsys.readouterr().err


def test_a_health_url_without_scheme_is_taken_as_http_and_said(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Then the editor needs a terminal, which a test has not: the URL was accepted before that.
    assert main(["edit", str(config), "--health-url", "127.0.0.1:8000/health"]) == 2
    err = capsys.readouterr().err
    assert "--health-url: no scheme given; using http://127.0.0.1:8000/health" in err
    assert "needs a terminal" in err
