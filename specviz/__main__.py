"""`python -m specviz ...`: see specviz/cli/."""
import sys

from .cli import main

sys.exit(main())
