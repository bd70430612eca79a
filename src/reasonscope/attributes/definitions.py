"""The twelve rationale attributes, re-exported for the attributes family.

The twelve rationale attributes: defined in :mod:`reasonscope.judge.attributes` (the judge layer prompts and
parses them, and shared layers never import a family); re-exported here for the family.
"""

from ..judge.attributes import ATTRIBUTES, attribute_key

__all__ = ["ATTRIBUTES", "attribute_key"]
