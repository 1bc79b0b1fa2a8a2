import sys

from specviz.cli import main

sys.exit(main())
