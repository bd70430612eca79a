"""Execution: model calls through the store, and the executors of per-item scoring work (shared services).

:mod:`~reasonscope.execution.calls` plans requests with their cache keys, sends only what the store lacks and
commits each completion as it arrives; :mod:`~reasonscope.execution.executors` runs model-based scoring
(NLI, similarity) locally or on Ray workers.

Layer: shared services, not the run pipeline. The run pipeline uses both, but so do the families (attribute
judges, attack regeneration and transfer call models; the behaviour and attack families score through the
executors), and a family may not import the run pipeline; so they sit below the families.
Nothing is imported here: each module loads on first use.
"""
