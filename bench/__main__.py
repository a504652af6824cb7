"""``python -m bench --quick | --full | --smoke``: see bench/__init__.py."""

from bench.runner import main

raise SystemExit(main())
