"""`python -m reprokit`: the same CLI as the `reprokit` console script."""

from reprokit.cli import main

raise SystemExit(main())
