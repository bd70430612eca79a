"""RACE: do a language model's rationales cite the evidence a TF-IDF logistic regression relies on?

The method is described in :mod:`reasonscope.evidence.family`.
"""
