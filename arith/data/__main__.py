"""`python -m arith.data dump|preview`: the data command (arith.data.datasets)."""

from arith.data.datasets import main

raise SystemExit(main())
