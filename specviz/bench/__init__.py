"""Benchmarks and load tests: tools that use the engine; nothing in the core imports them."""
