"""Property: splicing a value into any JSON layout changes that value and nothing else."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tui.configs.document import load_document

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
