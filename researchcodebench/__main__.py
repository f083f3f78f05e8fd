"""``python -m researchcodebench``: see ``researchcodebench.cli`` for the commands."""

import sys

from researchcodebench.cli import main

if __name__ == "__main__":
    sys.exit(main())
