"""LLM-as-judge: prompt templates and strict parsing of the judges' answers.

Public names are re-exported here, imported on first use.
"""

from .._lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "JudgeResult": "parse",
    "parse_judgement": "parse",
    "parse_pairwise": "parse",
    "parse_verdict": "parse",
    "judge_messages": "prompts",
    "pairwise_messages": "prompts",
    "reasoning_check_messages": "prompts",
    "same_meaning_messages": "prompts",
    "ATTRIBUTES": "attributes",
})
