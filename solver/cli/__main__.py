"""`python -m solver.cli.main`."""

from solver.cli.main import main

raise SystemExit(main())
