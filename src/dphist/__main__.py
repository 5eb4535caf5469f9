"""``python -m dphist``: the same command line as the ``dphist`` script."""

from .cli import main

raise SystemExit(main())
