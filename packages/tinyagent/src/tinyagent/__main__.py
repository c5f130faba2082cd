"""`python -m tinyagent` entry point."""

import sys

from tinyagent.cli import main

if __name__ == "__main__":
    sys.exit(main())
