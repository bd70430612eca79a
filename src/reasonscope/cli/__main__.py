"""``python -m reasonscope.cli``."""

from .root import main

main()
