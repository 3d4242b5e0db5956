"""spectop: watch and tune speculative decoding on LLM inference servers."""

import logging

__version__ = "0.1.0"

# Library practice: records go nowhere until the debug log is on (tui/debug_log.py), never to stderr.
logging.getLogger(__name__).addHandler(logging.NullHandler())
