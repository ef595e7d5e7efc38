"""`python -m lab.search --grid NAME`: a search's cost-to-gate table (its figure, UI view) from the store."""

from __future__ import annotations

import sys

from lab.search.costs import main

if __name__ == "__main__":
    sys.exit(main())
