"""The llama.cpp Python bindings: whether they are installed, and importing them quietly.

The backend (models/llama_cpp.py) and the quantizer (models/requantize.py) both need them; nothing imports them
until a model loads or a file is requantized.
"""

from __future__ import annotations

import logging

from specviz.models.offline import ModelUnavailable

INSTALL_COMMAND = "pip install -r requirements-llama.txt"  # builds llama.cpp from source, once


def available() -> bool:
    """Whether the llama.cpp bindings are installed (without importing them), also where they were installed since
    this process started (the import system's cached folder listings are read afresh)."""
    import importlib
    import importlib.util

    importlib.invalidate_caches()
    return importlib.util.find_spec("llama_cpp") is not None


def bindings():
    """The bindings, quiet (llama.cpp logs every load to stderr), or ModelUnavailable with the install line."""
    try:
        import llama_cpp
        from llama_cpp import _internals
    except ImportError as error:
        raise ModelUnavailable(f"The llama.cpp backend needs the llama.cpp Python bindings; run: {INSTALL_COMMAND} "
                               f"({error})") from error
    logging.getLogger("llama-cpp-python").setLevel(logging.ERROR)
    return llama_cpp, _internals
