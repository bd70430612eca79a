"""The names of a run folder's own files, importing nothing.

:mod:`reasonscope.pipeline.fast_rerun` reads them before anything else is imported, so they live here rather
than in the modules that write the files (:mod:`~reasonscope.storage.rundir`, :mod:`~reasonscope.storage.store`).
"""

LOCK_FILENAME = ".reasonscope.lock"
"""The run folder's lock file (:class:`reasonscope.storage.rundir.RunDirLock`)."""
STORE_FILENAME = "store.sqlite"
"""The run folder's SQLite store (:class:`reasonscope.storage.store.Store`)."""
