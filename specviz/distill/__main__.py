"""`python -m specviz.distill`: train the distilled draft for the offline target."""

import sys

from specviz.distill.train import main

try:
    sys.exit(main())
except (ValueError, OSError) as error:
    print(f"specviz.distill: {error}", file=sys.stderr)
    sys.exit(1)
