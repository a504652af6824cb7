"""``python -m rocketstore``: the same command line as the ``rocketstore`` script, for environments where the
script's directory is not on PATH (a venv not activated, ``pip install --user``)."""

import sys

from rocketstore.cli.main import main

if __name__ == "__main__":  # importing the module (a tool walking the package) runs nothing
    sys.exit(main())
