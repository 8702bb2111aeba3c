"""`python -m specviz ...`: see specviz/cli.py."""
import sys

from .cli import main

sys.exit(main())
