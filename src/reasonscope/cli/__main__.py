"""``python -m reasonscope.cli``."""

from .process import main

main()
