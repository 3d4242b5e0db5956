"""spectop: watch and tune speculative decoding on LLM inference servers."""

import logging
import sys

__version__ = "0.1.0"

# Library practice: records go nowhere until the debug log is on (tui/debug_log.py), never to stderr.
logging.getLogger(__name__).addHandler(logging.NullHandler())

# httpx's package imports its own command-line client (click, rich.progress, rich.syntax, pygments'
# lexers) whenever click is installed, which uvicorn brings: paid on every start for an `httpx.main`
# spectop never calls. A None in sys.modules makes that optional import fail as it does where click is not
# installed, which httpx handles (a stub `main`). setdefault: an httpx already imported is left as it is.
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]  # None: the documented "not importable"
