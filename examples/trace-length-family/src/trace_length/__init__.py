"""reasonscope-trace-length: an example method family installed as a plugin (entry point ``reasonscope.families``)."""

from .entry import FAMILY, TraceLengthFamily
from .settings import TraceLengthConfig

__all__ = ["FAMILY", "TraceLengthConfig", "TraceLengthFamily"]
