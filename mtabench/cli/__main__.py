"""`python -m mtabench.cli`: the command line, as the `mtabench` script runs it."""

import sys

from mtabench.cli.main import main

sys.exit(main())
