"""``python -m graymatter`` runs the command-line interface."""

import sys

from graymatter.faces.cli.main import main

sys.exit(main())
