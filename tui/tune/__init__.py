"""`spectop tune`: sweep one speculative-decoding knob, restart, measure, recommend, apply (no textual)."""
