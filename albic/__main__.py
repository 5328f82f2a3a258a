"""`python -m albic`: the albic command line (see albic.cli.main)."""

import sys

from albic.cli.main import main

sys.exit(main())
