"""Dataset loaders, imported predictions, human preferences and the built-in synthetic sets.

Public names are re-exported here, imported on first use.
"""

from .._lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "DatasetError": "loaders",
    "BadRow": "loaders",
    "LoadResult": "loaders",
    "RowError": "loaders",
    "load_dataset": "loaders",
    "ImportedGeneration": "predictions",
    "ImportResult": "predictions",
    "parse_mapping": "predictions",
    "read_predictions": "predictions",
    "PreferenceRecord": "preferences",
    "load_preferences": "preferences",
    "synthetic_items": "synthetic",
    "topic_items": "synthetic_topics",
    "word_problem_items": "word_problems",
})
