"""The advice tests keep step-cost models and histories in a private data folder, as the tune tests do."""

from tests.tune.conftest import _private_history  # noqa: F401 (an autouse fixture)
