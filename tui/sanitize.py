"""Untrusted text made safe for a terminal: the one function every renderer uses.

Everything that comes from a server (label values, error bodies, response text) or a file (log lines,
recordings, prompt sets, past bursts) may hold terminal control sequences: an OSC that retitles the
pane or writes the clipboard (OSC 52), a CSI that clears the screen, a bidi override that makes text
read backwards. Before such text reaches any terminal output it goes through `safe_text` (multi-line
text) or `safe_line` (one line: a card field, a table cell, a log line).

The rules:
- complete escape sequences are removed: CSI (`ESC [` … final byte), OSC (`ESC ]` … BEL or ST),
  DCS / SOS / PM / APC strings (`ESC P`, `ESC X`, `ESC ^`, `ESC _` … ST), and two-character
  sequences (`ESC 7`, `ESC ( B`, `ESC =`, …) — vLLM's colour codes vanish like any other;
- every other control character is replaced by a visible symbol, so nothing is silently lost:
  C0 controls (U+0000-U+001F) by their Unicode Control Picture (ESC → `␛`, BEL → `␇`, CR → `␍`,
  LF → `␊` in `safe_line`), DEL by `␡`, C1 controls (U+0080-U+009F, including the 8-bit CSI U+009B)
  and the bidi overrides / isolates (U+202A-U+202E, U+2066-U+2069) by U+FFFD `�`;
- tab is kept; `safe_text` keeps `\\n` too (and turns `\\r\\n` into `\\n`), `safe_line` shows it as `␊`.
  U+2028 / U+2029 (line / paragraph separator) count as line breaks: `␤` in `safe_line`.

Editable widgets (the config editor's fields and raw view) must show the file's text as it is, and a
terminal cell per character they measured: there `drop_controls` removes the controls from what is drawn
(they take no cell anyway), the text itself keeps them.

JSON output needs no stripping (the data stays as it is): `json.dumps` escapes C0 itself, and
`json_safe` escapes what it leaves raw (DEL, C1, bidi controls, U+2028/U+2029) as `\\uXXXX`.

Fast: a line that `str.isprintable()` (nearly every log line) is returned as it is, in one C loop.
"""

from __future__ import annotations

import re

REPLACEMENT = "\ufffd"

# ESC then: CSI parameters/intermediates/final; OSC up to BEL or ST (ESC \ or U+009C);
# DCS/SOS/PM/APC up to ST (BEL accepted as well, as xterm does); or intermediates and one final byte
# that does not open one of the sequences above (an unterminated one leaves its ESC to be shown).
_ESCAPE_SEQUENCE = re.compile(
    r"\x1b(?:"
    r"\[[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]"
    r"|\][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)"
    r"|[PX^_][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)"
    r"|[\x20-\x2f]*[\x30-\x4f\x51-\x57\x59-\x5a\x5c\x60-\x7e]"
    r")"
)

_BIDI_CONTROLS = [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]
_LINE_SEPARATORS = (0x2028, 0x2029)

_TEXT_TABLE: dict[int, str] = {code: chr(0x2400 + code) for code in range(0x20) if code not in (0x09, 0x0A)}
_TEXT_TABLE[0x7F] = "\u2421"
_TEXT_TABLE.update({code: REPLACEMENT for code in range(0x80, 0xA0)})
_TEXT_TABLE.update({code: REPLACEMENT for code in _BIDI_CONTROLS})

_LINE_TABLE = dict(_TEXT_TABLE)
_LINE_TABLE[0x0A] = "\u240a"
_LINE_TABLE.update({code: "\u2424" for code in _LINE_SEPARATORS})

_DROP_CODES = [*range(0x20), *range(0x7F, 0xA0), *_BIDI_CONTROLS, *_LINE_SEPARATORS]
_DROP_TABLE: dict[int, None] = dict.fromkeys(_DROP_CODES)

_JSON_RAW = re.compile("[\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def strip_escapes(text: str) -> str:
    """`text` without its complete escape sequences (a lone ESC stays)."""
    return _ESCAPE_SEQUENCE.sub("", text) if "\x1b" in text else text


def safe_text(text: str) -> str:
    """Multi-line `text` safe for a terminal: escape sequences removed, other controls made visible.

    Tabs and newlines are kept; a carriage return is shown as `␍` except in `\\r\\n`, which becomes `\\n`.
    """
    if text.isprintable():
        return text
    if "\x1b" in text:
        text = _ESCAPE_SEQUENCE.sub("", text)
        if text.isprintable():
            return text
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")
    return text.translate(_TEXT_TABLE)


def safe_line(text: str) -> str:
    """One line safe for a terminal: like `safe_text`, and line breaks shown as `␊` / `␍` / `␤`."""
    if text.isprintable():
        return text
    if "\x1b" in text:
        text = _ESCAPE_SEQUENCE.sub("", text)
        if text.isprintable():  # colour codes only (vLLM on a TTY)
            return text
    return text.translate(_LINE_TABLE)


def drop_controls(text: str) -> str:
    """`text` without any control character or bidi control (all zero-width): for drawn text only."""
    return text if text.isprintable() else text.translate(_DROP_TABLE)


def json_safe(text: str) -> str:
    """Serialised JSON with DEL, C1, bidi controls and U+2028/U+2029 escaped as `\\uXXXX` (lossless).

    Such characters can only stand inside JSON strings, where the escape means the same character.
    """
    if text.isascii() and "\x7f" not in text:
        return text
    return _JSON_RAW.sub(lambda match: f"\\u{ord(match.group()):04x}", text)
