"""`tui.sanitize`: escape sequences removed, other controls visible, printable text untouched."""

from __future__ import annotations

import json
import unicodedata

import pytest

from tests.untrusted import HOSTILE
from tui.sanitize import REPLACEMENT, drop_controls, json_safe, safe_line, safe_text, strip_escapes


def dangerous(text: str) -> list[str]:
    """Characters a terminal could act on: C0 except tab, DEL, C1, bidi overrides / isolates."""
    return [
        char
        for char in text
        if (ord(char) < 0x20 and char != "\t")
        or 0x7F <= ord(char) <= 0x9F
        or 0x202A <= ord(char) <= 0x202E
        or 0x2066 <= ord(char) <= 0x2069
    ]


def test_the_hostile_model_name() -> None:
    assert safe_line(HOSTILE) == f"evil{REPLACEMENT}31m{REPLACEMENT}"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("\x1b[1;31mERROR\x1b[0m done", "ERROR done"),  # CSI (vLLM's colours)
        ("\x1b[?1049h", ""),  # private mode
        ("a\x1b]0;title\x07b", "ab"),  # OSC ended by BEL
        ("a\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\b", "alinkb"),  # OSC 8 hyperlink, ended by ST
        ("a\x1b]52;c;aGk=\x9cb", "ab"),  # OSC ended by the 8-bit ST (shown: it is C1 otherwise)
        ("a\x1bPtmux;payload\x1b\\b", "ab"),  # DCS
        ("a\x1b_apc\x1b\\b\x1b^pm\x1b\\c\x1bXsos\x1b\\d", "abcd"),  # APC, PM, SOS
        ("a\x1b7b\x1b8c\x1bcd\x1b(Be\x1b=f", "abcdef"),  # two-character sequences
    ],
)
def test_complete_sequences_are_removed(raw: str, expected: str) -> None:
    assert safe_line(raw) == expected
    assert safe_text(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("a\x1b]0;no terminator", "a␛]0;no terminator"),  # unterminated OSC: its ESC is shown
        ("a\x1b[31", "a␛[31"),  # incomplete CSI
        ("end\x1b", "end␛"),
        ("bell\x07 bs\x08 nul\x00", "bell␇ bs␈ nul␀"),
        ("del\x7f", "del␡"),
        ("c1\x9b31m \x85 \x90", f"c1{REPLACEMENT}31m {REPLACEMENT} {REPLACEMENT}"),
        ("abc\u202edef\u2066g\u2069", f"abc{REPLACEMENT}def{REPLACEMENT}g{REPLACEMENT}"),
        ("tab\tkept", "tab\tkept"),
    ],
)
def test_other_controls_are_shown(raw: str, expected: str) -> None:
    assert safe_line(raw) == expected


def test_line_breaks() -> None:
    assert safe_line("one\ntwo\r\nthree\rfour\u2028five") == "one␊two␍␊three␍four␤five"
    assert safe_text("one\ntwo\r\nthree\rfour") == "one\ntwo\nthree␍four"


@pytest.mark.parametrize(
    "text", ["Qwen/Qwen3-8B", "meta-llama/Llama-3.1-8B-Instruct", "模型 · ünïcödé – 😀", "", "العربية עברית"]
)
def test_printable_text_is_untouched(text: str) -> None:
    assert safe_line(text) is text
    assert safe_text(text) is text
    assert json_safe(text) is text


def test_nothing_dangerous_survives_any_control_mix() -> None:
    every = "".join(chr(code) for code in [*range(0xA0), *range(0x2020, 0x2070)])
    for text in (every, every * 2, "\x1b" + every, every + "\x1b]"):
        assert dangerous(safe_line(text)) == []
        assert dangerous(safe_text(text)) == ["\n"] * text.count("\n")


def test_every_replacement_is_one_visible_cell() -> None:
    for char in {*safe_line("".join(chr(code) for code in range(0xA0))), REPLACEMENT} - {"\t"}:
        if not char.isascii():
            assert unicodedata.category(char) == "So", hex(ord(char))


def test_strip_escapes_keeps_everything_else() -> None:
    assert strip_escapes("a\x1b[2Jb\x07") == "ab\x07"
    assert strip_escapes("plain") == "plain"


def test_json_safe_is_lossless_and_leaves_no_raw_control() -> None:
    record = {"model": HOSTILE, "note": "ünï\x7f\u2028"}
    text = json_safe(json.dumps(record, ensure_ascii=False))
    assert json.loads(text) == record
    assert dangerous(text) == []
    assert "\u2028" not in text
    assert json_safe("ünï") == "ünï"


def test_drop_controls_keeps_the_cells() -> None:
    from rich.cells import cell_len

    assert drop_controls(HOSTILE) == "]0;PWNED[2J]52;c;aGVsbG8=evil31m"
    every = "".join(chr(code) for code in [*range(0xA0), *range(0x2020, 0x2070)])
    assert cell_len(drop_controls(every)) == cell_len(every) and dangerous(drop_controls(every)) == []
    assert drop_controls("plain ünï") == "plain ünï"
