"""``python -m graymatter`` runs the command-line interface."""

import sys

from graymatter.cli import main

sys.exit(main())
