"""`python -m arith.tracking send FOLDER`: the tracking utilities (arith.tracking.outbox)."""

from arith.tracking.outbox import main

raise SystemExit(main())
