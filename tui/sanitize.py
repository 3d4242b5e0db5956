"""Untrusted text made safe for a terminal: escape sequences removed, every other control shown (C0 as its
Control Picture, C1 and bidi controls as `�`), nothing silently lost. `json_safe` escapes what
`json.dumps` leaves raw; `drop_controls` is for drawn text only."""

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
    """Multi-line `text` safe for a terminal; a carriage return shows as `␍` except in `\\r\\n` (→ `\\n`)."""
    text = strip_escapes(text)
    if text.isprintable():  # often colour codes only (vLLM on a TTY)
        return text
    return text.replace("\r\n", "\n").translate(_TEXT_TABLE)


def safe_line(text: str) -> str:
    """One line safe for a terminal: like `safe_text`, and line breaks shown as `␊` / `␍` / `␤`."""
    text = strip_escapes(text)
    return text if text.isprintable() else text.translate(_LINE_TABLE)


def drop_controls(text: str) -> str:
    """`text` without any control character or bidi control (all zero-width): for drawn text only."""
    return text if text.isprintable() else text.translate(_DROP_TABLE)


def json_safe(text: str) -> str:
    """Serialised JSON with DEL, C1, bidi controls and U+2028/U+2029 escaped as `\\uXXXX` (lossless)."""
    if text.isascii() and "\x7f" not in text:
        return text
    return _JSON_RAW.sub(lambda match: f"\\u{ord(match.group()):04x}", text)
