"""The marks of a test that runs the real GGUF on llama.cpp: the slow tier, and skipped without the bindings or the
offline GGUF."""

import pytest

from specviz.models import llama_cpp, offline

# The real GGUF on llama.cpp: seconds, so the slow tier
LLAMA_CPP_MARKS = [pytest.mark.slow, pytest.mark.skipif(
    not llama_cpp.available() or offline.installed_gguf() is None,
    reason=f"needs the llama.cpp bindings ({llama_cpp.INSTALL_COMMAND}) and {offline.INSTALL_COMMAND}")]


def llama_cpp_only(test):
    for mark in LLAMA_CPP_MARKS:
        test = mark(test)
    return test
