"""The run pipeline: the layer under the command line that runs a plan and scores runs.

:mod:`~reasonscope.pipeline.runner` generates a plan's answers into the store and scores them,
:mod:`~reasonscope.pipeline.family_scoring` scores a stored run with every enabled family (``reasonscope score``),
:mod:`~reasonscope.pipeline.score_imported` scores outputs produced elsewhere (a predictions file),
:mod:`~reasonscope.pipeline.up_to_date` decides whether a finished step can be skipped (and
:mod:`~reasonscope.pipeline.fast_rerun` whether a re-run can be answered before the plan is resolved) and
:mod:`~reasonscope.pipeline.run_outcome` turns what each model answered into the command's exit code.

Layer: under the command line, above plan assembly (:mod:`reasonscope.plan`, :mod:`reasonscope.registry`), the
families and the shared services. It reaches the families only through the registry and names none of them.
Nothing is imported here: each module loads on first use.
"""
