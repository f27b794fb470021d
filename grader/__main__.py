"""`python -m grader`: the same command line as the `grader` script."""

from grader.cli import main

raise SystemExit(main())
