"""Entry point: `python -m services …` (see services/cli.py)."""

import sys

from services.cli import main

sys.exit(main())
