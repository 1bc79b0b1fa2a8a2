"""specviz: exact speculative decoding on real language models, recorded round by round.

The package is layered so that data flows one way (see docs/architecture.md):

    models -> engine -> Trace -> metrics / theory -> figures / HTML -> UI

Nothing heavy runs at import: models load lazily, on first use, and are cached.
"""

__version__ = "0.1.0"
