"""Answer extraction and matching, numbers and math answers, step splitting.

Public names are re-exported here, imported on first use.
"""

from .._lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "Extraction": "answers",
    "extract_answer": "answers",
    "answers_match": "answers",
    "parse_number": "answers",
    "parse_boolean": "answers",
    "parse_choice": "answers",
    "parse_label": "answers",
    "parse_target": "answers",
    "split_think": "answers",
    "normalize_text": "answers",
    "MathAnswer": "mathexpr",
    "math_equal": "mathexpr",
    "Numeral": "numbers",
    "find_numbers": "numbers",
    "split_steps": "steps",
    "strip_terminal_codes": "sanitize",
})
