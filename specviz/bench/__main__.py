"""`python -m specviz.bench`: the benchmark (also `python -m specviz bench`)."""

import sys

from specviz.bench.command import main

sys.exit(main())
