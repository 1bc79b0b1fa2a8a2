"""`python -m specviz.bench`: the benchmark (also `python -m specviz bench`)."""

import sys

from specviz.bench.run import main

sys.exit(main())
