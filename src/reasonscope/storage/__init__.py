"""Storage: the run folder, its SQLite store and the files and caches around it (the ground layer).

:mod:`~reasonscope.storage.store` (the SQLite store of requests, generations and scores),
:mod:`~reasonscope.storage.run_links` (a run's linked requests read with :mod:`sqlite3` alone),
:mod:`~reasonscope.storage.run_data` (a run read back from the store, interpreted),
:mod:`~reasonscope.storage.rundir` (the run folder and its lock), :mod:`~reasonscope.storage.run_files` (the
names of the run folder's own files), :mod:`~reasonscope.storage.digests` (a file's sha256),
:mod:`~reasonscope.storage.atomic_files`,
:mod:`~reasonscope.storage.io_errors`, :mod:`~reasonscope.storage.scrub` (secrets kept out of stored text),
:mod:`~reasonscope.storage.processes`, :mod:`~reasonscope.storage.user_cache` (the per-user cache folder),
:mod:`~reasonscope.storage.versions` (library versions recorded with scores) and
:mod:`~reasonscope.storage.yaml_io` (YAML read with line numbers).

Layer: the ground, with the shared types (:mod:`reasonscope.types`) and text helpers (:mod:`reasonscope.text`):
it imports nothing above them, and every other layer may import it.
Nothing is imported here: each module loads on first use.
"""
