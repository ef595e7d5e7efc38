"""`python -m arith.training`: one trial from the command line (arith.training.cli)."""

from arith.training.cli import main

raise SystemExit(main())
