"""The step-cost model and its calibration, the live advisor, and the guard that changes and verifies."""
