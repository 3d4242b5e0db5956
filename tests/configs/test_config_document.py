"""Round trips are byte-identical; one change touches one line and nothing else."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from config_awkward_samples import JSON_AWKWARD, TOML_AWKWARD
from hypothesis import given, settings
from hypothesis import strategies as st

from tui.configs.document import JsonDocument, load_document, parse_key_path
from tui.configs.errors import ConfigSyntaxError, KeyPathError
from tui.configs.kinds import detect_kind
from tui.paths import sample_configs_dir

SAMPLES = sorted(p for p in sample_configs_dir().iterdir() if p.suffix in (".toml", ".json"))
SERVER_SAMPLES = [p for p in SAMPLES if p.name != "spectop.toml"]


def _other_value(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 7
    if isinstance(value, float):
        return value / 2 + 0.125
    if value is None:
        return 1
    return f"{value}-changed"


def _all_cases() -> list[tuple[str, bytes]]:
    cases = [(path.name, path.read_bytes()) for path in SERVER_SAMPLES]
    cases += [(f"toml:{name}", data) for name, data in TOML_AWKWARD.items()]
    cases += [(f"json:{name}", data) for name, data in JSON_AWKWARD.items()]
    return cases


def _load(name: str, data: bytes):
    text = data.decode("utf-8")
    if name.startswith("json:"):
        kind = "client_json" if "base_url" in text else "sglang_json"
        return load_document(text, kind)
    return load_document(text)


@pytest.mark.parametrize(("name", "data"), _all_cases(), ids=[name for name, _ in _all_cases()])
def test_one_change_touches_one_line_and_changing_back_restores_every_byte(name: str, data: bytes) -> None:
    doc = _load(name, data)
    before = doc.text.splitlines(keepends=True)
    paths = _scalar_paths(doc.data)
    assert paths
    for path in paths:
        original = doc.get(path)
        changed = doc.with_value(path, _other_value(original))
        assert changed.get(path) == _other_value(original)
        after = changed.text.splitlines(keepends=True)
        assert len(after) == len(before), path
        changed_lines = [i for i, (old, new) in enumerate(zip(before, after, strict=True)) if old != new]
        assert changed_lines == [doc.line_of(path) - 1], path
        restored = changed.with_value(path, original)
        line = before[doc.line_of(path) - 1]
        canonical = json.dumps(original, ensure_ascii=False) if not isinstance(original, str) else original
        if not re.search(rf"(?<![\w.]){re.escape(canonical)}(?![\w.])", line):
            # Number spellings (6e-1, 0.70, 32_768) and \u escapes come back in canonical form once touched.
            assert restored.data == doc.data
        else:
            assert restored.text == doc.text, path


def test_new_keys_follow_the_file_style() -> None:
    crlf = load_document(TOML_AWKWARD["crlf"].decode()).with_value(("speculative", "method"), "mtp")
    assert 'method = "mtp"\r\n' in crlf.text
    assert "\n" not in crlf.text.replace("\r\n", "")
    json4 = load_document(JSON_AWKWARD["indent4"].decode(), "sglang_json")
    added = json4.with_value(("max_running_requests",), 48)
    assert '    "custom": {\n        "keep": "me"\n    },\n    "max_running_requests": 48\n}' in added.text
    nested = json4.with_value(("custom", "more"), {"a": [1]})
    assert json.loads(nested.text)["custom"] == {"keep": "me", "more": {"a": [1]}}
    assert '        "more": {\n            "a": [\n' in nested.text
    crlf_json = load_document(JSON_AWKWARD["crlf_no_final_newline"].decode(), "client_json")
    with_key = crlf_json.with_value(("stream",), True)
    assert with_key.text.endswith('"temperature": 0.70,\r\n  "stream": true\r\n}')
    one_line = load_document(JSON_AWKWARD["one_line"].decode(), "client_json")
    assert one_line.with_value(("extra_body", "top_p"), 0.9).text.endswith('"extra_body": {"top_p": 0.9}}')
    assert one_line.with_value(("model",), "x").text.endswith('"extra_body": {}, "model": "x"}')


def test_new_table_in_toml() -> None:
    doc = load_document('[model]\nname = "m"\n')
    changed = doc.with_value(("scheduler", "max_num_seqs"), 32)
    assert changed.text == '[model]\nname = "m"\n\n[scheduler]\nmax_num_seqs = 32\n'


def test_remove_keys() -> None:
    json_doc = load_document(JSON_AWKWARD["indent2_nested"].decode(), "client_json")
    assert "timeout" not in json_doc.without(("timeout",)).data
    assert json_doc.without(("timeout",)).text.count("\n") == json_doc.text.count("\n") - 1
    last = json_doc.without(("extra_body", "nested"))
    assert json.loads(last.text)["extra_body"] == {"top_p": 0.95}
    toml_doc = load_document(TOML_AWKWARD["comments_everywhere"].decode())
    assert "enabled" not in toml_doc.without(("speculative", "enabled")).data["speculative"]
    with pytest.raises(KeyPathError):
        json_doc.without(("nope",))


def test_bad_paths_and_syntax_errors_say_where() -> None:
    with pytest.raises(KeyPathError, match="dotted path"):
        parse_key_path("speculative..x")
    doc = load_document(TOML_AWKWARD["crlf"].decode())
    with pytest.raises(KeyPathError, match=r"no key 'speculative\.nope'"):
        doc.get(("speculative", "nope"))
    with pytest.raises(KeyPathError, match="not a table"):
        doc.with_value(("model", "name", "x"), 1)
    with pytest.raises(ConfigSyntaxError) as toml_error:
        load_document('[model]\nname = "m"\nbad = = 1\n')
    assert toml_error.value.line == 3
    with pytest.raises(ConfigSyntaxError) as json_error:
        load_document('{\n  "tp_size": 8,\n  "x": tru\n}\n', "sglang_json")
    assert (json_error.value.line, json_error.value.column) == (3, 8)
    with pytest.raises(ConfigSyntaxError, match="JSON object"):
        JsonDocument("[1, 2]", "sglang_json")


def test_kind_detection() -> None:
    assert detect_kind(TOML_AWKWARD["crlf"].decode()) == "vllm_toml"
    assert detect_kind(JSON_AWKWARD["indent4"].decode()) == "sglang_json"
    assert detect_kind(JSON_AWKWARD["indent2_nested"].decode()) == "client_json"
    assert detect_kind('{"model_path": "m", "tp_size": 1, ') == "sglang_json"  # broken, still told apart
    for path in SERVER_SAMPLES:
        expected = {"config.toml": "vllm_toml", "config_mtp_off.toml": "vllm_toml"}.get(
            path.name, "client_json" if path.name.startswith("client") else "sglang_json"
        )
        assert detect_kind(path.read_text(), path) == expected, path.name


keys = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=8)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**12), 10**12),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.text(max_size=10),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(keys, inner, max_size=3)),
    max_leaves=8,
)
layouts = st.sampled_from([None, 2, 4, "\t"])


def _scalar_paths(data: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    if isinstance(data, dict):
        return [path for key, value in data.items() for path in _scalar_paths(value, (*prefix, key))]
    return [] if isinstance(data, list) or not prefix else [prefix]


def _render(data: dict[str, Any], indent: Any, crlf: bool, ascii_only: bool) -> str:
    text = json.dumps(data, indent=indent, ensure_ascii=ascii_only)
    return text.replace("\n", "\r\n") if crlf else text


@settings(max_examples=150, deadline=None)
@given(
    data=st.dictionaries(keys, values, min_size=1, max_size=6),
    indent=layouts,
    crlf=st.booleans(),
    ascii_only=st.booleans(),
    new_value=scalars,
    pick=st.integers(0, 1000),
)
def test_set_changes_only_that_value(
    data: dict[str, Any], indent: Any, crlf: bool, ascii_only: bool, new_value: Any, pick: int
) -> None:
    text = _render(data, indent, crlf, ascii_only)
    doc = load_document(text, "client_json")
    assert doc.data == json.loads(text)
    paths = _scalar_paths(doc.data)
    if not paths:
        return
    path = paths[pick % len(paths)]
    changed = doc.with_value(path, new_value)
    expected = json.loads(text)
    node = expected
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = new_value
    assert json.loads(changed.text) == expected
    old_lines, new_lines = text.split("\n"), changed.text.split("\n")
    assert len(old_lines) == len(new_lines)
    assert sum(a != b for a, b in zip(old_lines, new_lines, strict=True)) <= 1
    assert changed.with_value(path, doc.get(path)).data == doc.data


@settings(max_examples=100, deadline=None)
@given(
    data=st.dictionaries(keys, values, min_size=1, max_size=5),
    indent=layouts,
    crlf=st.booleans(),
    new_key=keys,
    new_value=values,
)
def test_adding_and_removing_keys_keeps_the_rest(
    data: dict[str, Any], indent: Any, crlf: bool, new_key: str, new_value: Any
) -> None:
    text = _render(data, indent, crlf, False)
    doc = load_document(text, "client_json")
    added = doc.with_value((new_key,), new_value)
    assert json.loads(added.text) == {**data, new_key: new_value}
    if new_key not in data:
        assert added.without((new_key,)).data == data
        if crlf:
            assert "\n" not in added.text.replace("\r\n", "")
    first = next(iter(data))
    removed = doc.without((first,))
    assert json.loads(removed.text) == {key: value for key, value in data.items() if key != first}
