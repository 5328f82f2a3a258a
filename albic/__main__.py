"""`python -m albic`: the albic command line (see albic.cli)."""
import sys

from albic.cli import main

sys.exit(main())
