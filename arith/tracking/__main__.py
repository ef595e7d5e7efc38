"""`python -m arith.tracking send FOLDER`: the tracking utilities (arith.tracking.runs)."""

from arith.tracking.runs import main

raise SystemExit(main())
