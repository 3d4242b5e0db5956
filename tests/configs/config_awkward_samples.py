"""Awkward config files for round-trip tests, as exact bytes (CRLF, no final newline, unicode...)."""

from __future__ import annotations

TOML_AWKWARD: dict[str, bytes] = {
    "comments_everywhere": (
        b"# top comment\n"
        b"\n"
        b"[model]   # trailing comment on a header\n"
        b'name = "deepseek-ai/DeepSeek-V3"  # the target\n'
        b"  # indented comment\n"
        b"gpu_memory_utilization = 0.85 # no space before\n"
        b"\n"
        b"\n"
        b"[speculative]\n"
        b"enabled = true\n"
        b"num_speculative_tokens = 2\n"
        b"# last comment\n"
    ),
    "crlf": (
        b"[model]\r\n"
        b'name = "m"\r\n'
        b"gpu_memory_utilization = 0.8\r\n"
        b"\r\n"
        b"[speculative]\r\n"
        b"num_speculative_tokens = 2\r\n"
    ),
    "no_final_newline": b'[model]\nname = "m"\n[speculative]\nnum_speculative_tokens = 3',
    "unicode": (
        "# 草稿接受率低于阈值时自动降级，避免负优化\n"
        "[model]\n"
        'name = "模型/é-ü"\n'
        "[speculative]\n"
        "# ÄÖÜ — emoji 🚀\n"
        "acceptance_threshold = 0.6\n"
        'note = "\\u00e9 escaped stays escaped"\n'
    ).encode(),
    "inline_tables": (
        b"[model]\n"
        b'name = "m"\n'
        b"[speculative]\n"
        b"num_speculative_tokens = 2\n"
        b'extra = { a = 1, b = "two",   c = [1, 2, 3] }\n'
        b"[sim]\n"
        b"base_step_ms = 25.0\n"
        b"profile = {   bursty = true }\n"
    ),
    "arrays_of_tables": (
        b"[model]\n"
        b'name = "m"\n'
        b"tensor_parallel_size = 2\n"
        b"\n"
        b"[[sim.phases]]\n"
        b"seconds = 10\n"
        b"acceptance = 0.7\n"
        b"\n"
        b"[[sim.phases]]\n"
        b"seconds = 20\n"
        b"acceptance = 0.3   # drift\n"
        b"\n"
        b"[speculative]\n"
        b"num_speculative_tokens = 2\n"
    ),
    "odd_spacing_and_quotes": (
        b"[model]\n"
        b"name='single-quoted/literal'\n"
        b'dtype   =    "bfloat16"\n'
        b"\tmax_model_len\t=\t32_768\n"
        b"[speculative]\n"
        b"num_speculative_tokens=2\n"
        b"acceptance_threshold = 6e-1\n"
    ),
}

JSON_AWKWARD: dict[str, bytes] = {
    "indent2_nested": (
        b"{\n"
        b'  "base_url": "http://127.0.0.1:8000/v1",\n'
        b'  "timeout": 120,\n'
        b'  "stream": true,\n'
        b'  "extra_body": {\n'
        b'    "top_p": 0.95,\n'
        b'    "nested": {"deep": [1, 2, {"x": null}]}\n'
        b"  }\n"
        b"}\n"
    ),
    "indent4": (
        b"{\n"
        b'    "model_path": "deepseek-ai/DeepSeek-V3",\n'
        b'    "tp_size": 8,\n'
        b'    "speculative_algorithm": "EAGLE",\n'
        b'    "speculative_num_steps": 3,\n'
        b'    "speculative_eagle_topk": 1,\n'
        b'    "speculative_num_draft_tokens": 4,\n'
        b'    "custom": {\n'
        b'        "keep": "me"\n'
        b"    }\n"
        b"}\n"
    ),
    "crlf_no_final_newline": (
        b"{\r\n"
        b'  "base_url": "https://example.invalid/v1",\r\n'
        b'  "max_retries": 2,\r\n'
        b'  "temperature": 0.70\r\n'
        b"}"
    ),
    "unicode_and_escapes": (
        "{\n"
        '  "model_path": "模型/é",\n'
        '  "escaped": "\\u00e9\\n\\t\\"",\n'
        '  "tp_size": 1,\n'
        '  "emoji": "🚀"\n'
        "}\n"
    ).encode(),
    "tabs_and_odd_spacing": (
        b"{\n"
        b'\t"model_path" :  "m",\n'
        b'\t"tp_size":2 ,\n'
        b'\t"mem_fraction_static":   8.5e-1,\n'
        b'\t"list": [ 1,2 , 3 ]\n'
        b"}\n"
    ),
    "one_line": b'{"base_url": "http://127.0.0.1:8000/v1", "timeout": 120, "stream": true, "extra_body": {}}',
}
