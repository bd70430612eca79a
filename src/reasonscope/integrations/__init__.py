"""Reasonscope inside other evaluation frameworks.

:mod:`reasonscope.integrations.inspect_scorers` (inspect-ai scorers; needs the ``[inspect]`` extra).
"""
