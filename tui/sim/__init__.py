"""The built-in speculative-decoding simulator (vLLM, SGLang, llama.cpp
flavours). Never imports textual."""
