"""``python -m assay.cli``."""

from . import main

main()
