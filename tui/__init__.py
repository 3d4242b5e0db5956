"""spectop: watch and tune speculative decoding on LLM inference servers."""

__version__ = "0.1.0"
