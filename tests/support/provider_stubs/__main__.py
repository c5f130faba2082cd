"""Run the provider stub standalone: ``python -m support.provider_stubs --script replies.json``."""

import sys

from .process import main

sys.exit(main())
