"""An inspect-ai task scored by reasonscope's scorers (docs/integrations.md).

Offline, with a scripted mock model and SmolLM2 judging entailment between steps:

    inspect eval examples/inspect_task.py -T scripted=true -T nli=llm:smollm2 --log-dir runs/inspect-logs

With any model inspect supports (an API key in the environment):

    inspect eval examples/inspect_task.py --model openai/gpt-4o-mini --log-dir runs/inspect-logs

Then the same log through reasonscope's store and report:

    reasonscope score --from inspect runs/inspect-logs --name inspect-example
"""

from __future__ import annotations

from collections import Counter

from inspect_ai import Epochs, Task, task
from inspect_ai.dataset import Sample
from inspect_ai.model import GenerateConfig, ModelOutput, ModelUsage, get_model
from inspect_ai.solver import generate, system_message

from reasonscope.integrations.inspect_scorers import (
    answer_correctness,
    first_epoch,
    logical_coherence,
    trace_stability,
)

QUESTIONS = [  # (id, question, gold answer, the scripted model's answers over three epochs)
    ("apples", "Tom has 3 apples and buys 4 more. How many apples does he have?", "7",
     ["Tom starts with 3 apples.\nHe buys 4 more, so 3 + 4 = 7.\nAnswer: 7",
      "3 + 4 = 8.\nAnswer: 8",
      "He has 3 and gets 4.\nThat makes 7.\nAnswer: 7"]),
    ("eggs", "A box holds 12 eggs. How many eggs are in 2 boxes?", "24",
     ["Each box holds 12 eggs.\nTwo boxes hold 2 * 12 = 24 eggs.\nAnswer: 24",
      "2 * 12 = 24.\nAnswer: 24",
      "Twelve eggs twice is 24 eggs.\nAnswer: 24"]),
    ("sky", "Is the sky blue on a clear day?", "yes",
     ["On a clear day sunlight scatters.\nBlue light scatters most.\nAnswer: yes",
      "Answer: yes",
      "The sky looks grey.\nAnswer: no"]),
]
SYSTEM = "Reason step by step, one step per line, then give the final answer on a line 'Answer: <answer>'."


def scripted_model():
    """inspect's mock model (mockllm/model) answering from the script above, one answer per epoch."""
    calls: Counter = Counter()
    script = {question: answers for _, question, _, answers in QUESTIONS}

    def respond(messages, tools, tool_choice, config):
        question = messages[-1].text
        text = script[question][calls[question] % 3]
        calls[question] += 1
        out = ModelOutput.from_content("mockllm/model", text)
        n = len(text.split())
        out.usage = ModelUsage(input_tokens=30, output_tokens=n, total_tokens=30 + n)
        return out

    return get_model("mockllm/model", custom_outputs=respond)


@task
def arithmetic_reasoning(scripted: bool = False, nli: str = "hf:cross-encoder/nli-deberta-v3-small",
                         similarity: str = "embedding", epochs: int = 3) -> Task:
    """Three questions, scored for answer correctness and consistency, step coherence and trace stability.

    Args:
        scripted: answer with the scripted mock model (offline) instead of the eval's --model.
        nli: NLI backend of logical_coherence: hf:<id or path> or llm:<reasonscope model spec>.
        similarity: bertscore or embedding (trace_stability).
        epochs: samples per question (CS and SS need 2 or more).
    """
    return Task(
        dataset=[Sample(id=i, input=q, target=gold, metadata={"answer_type": "number" if gold.isdigit() else "boolean"})
                 for i, q, gold, _ in QUESTIONS],
        solver=[system_message(SYSTEM), generate()],
        scorer=[answer_correctness(), logical_coherence(nli=nli), trace_stability(similarity=similarity)],
        epochs=Epochs(epochs, ["mean", first_epoch()]),
        model=scripted_model() if scripted else None,
        config=GenerateConfig(max_tokens=128),
    )
