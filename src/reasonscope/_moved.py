"""Old import paths of the modules moved into packages, kept working (with a warning) for one release.

``import reasonscope.runner`` still works: a finder on :data:`sys.meta_path` maps each old dotted name in
:data:`MOVED` to its new module and hands back the *same* module object (so a monkeypatch or mock through
the old name patches what the code uses), after a :class:`DeprecationWarning` naming the new path.
Installed by ``reasonscope/__init__.py``; to be removed in the release after the move.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
import warnings
from types import ModuleType

#: Old module (under ``reasonscope.``) -> its new home.
MOVED: dict[str, str] = {
    "runner": "pipeline.runner",
    "scoring": "pipeline.family_scoring",
    "importer": "pipeline.score_imported",
    "up_to_date": "pipeline.up_to_date",
    "outcome": "pipeline.run_outcome",
    "store": "storage.store",
    "atomic_files": "storage.atomic_files",
    "io_errors": "storage.io_errors",
    "scrub": "storage.scrub",
    "rundir": "storage.rundir",
    "processes": "storage.processes",
    "user_cache": "storage.user_cache",
    "versions": "storage.versions",
    "yaml_io": "storage.yaml_io",
    "results": "storage.run_data",
    "calls": "execution.calls",
    "executors": "execution.executors",
    "outputs": "output_files",
    "settings": "shared_settings",
    "config": "plan",
    "attack.outcomes": "attack.outcome_rules",
    "attributes.definitions": "judge.attributes",
    "family_order": "registry",  # the built-in families' names and orders are the registry's data
    "report.tables": "behavior.report_view",
    "report.evidence_view": "evidence.report_view",
    "report.information_view": "information.report_view",
    "report.attributes_view": "attributes.report_view",
    "report.attack_view": "attack.report_view",
}


class _Alias:
    """Finds ``reasonscope.<old>`` and loads it as the module at its new path (the same object).

    A meta path finder and loader by duck typing (``find_spec``, ``create_module``, ``exec_module``):
    subclassing ``importlib.abc`` would import ``importlib.resources`` (~40 ms) at every CLI start.
    """

    def __init__(self, package: str) -> None:
        self.package = package
        self.targets = {f"{package}.{old}": f"{package}.{new}" for old, new in MOVED.items()}
        self._specs: dict[str, importlib.machinery.ModuleSpec | None] = {}

    def find_spec(self, fullname: str, path=None, target=None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self.targets:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        new = self.targets[spec.name]
        warnings.warn(f"{spec.name} moved to {new}; the old path works until the next release",
                      DeprecationWarning, stacklevel=2)
        module = importlib.import_module(new)
        self._specs[spec.name] = module.__spec__  # the import machinery sets __spec__ next: put it back after
        return module

    def exec_module(self, module: ModuleType) -> None:
        module.__spec__ = self._specs.pop(module.__spec__.name, module.__spec__)


def install(package: str) -> None:
    """Put the old-path finder first on :data:`sys.meta_path` (once per interpreter)."""
    if not any(isinstance(f, _Alias) for f in sys.meta_path):
        sys.meta_path.insert(0, _Alias(package))
