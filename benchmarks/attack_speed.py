"""Benchmark: seconds per attacked item for each MATCHA method on the embedded SmolLM2 (CPU), and how
the cost grows with the question's length.

For each question length (a word problem padded with neutral context sentences), the clean
answer-first chain is generated once, then each method attacks it with the default settings
(ratio 0.2, 5 rounds, top-k 8, 16 candidates, eps p = 0.005, 96-token chains), regeneration
included. The meaning filter (embedded MiniLM) is on, as in a real run. Printed per method and
length: total seconds, seconds of the attack alone (total minus regenerating the chain, whose length
varies with what the model writes), the regenerated chain's tokens, and the growth of the attack
alone against the shortest question.

    python benchmarks/attack_speed.py --pads 0 2 6

``--dtype bf16``: the token and embedding searches in float32 against the same under
``torch.autocast("cpu", dtype=torch.bfloat16)`` around the attack objective's passes (what a bf16 option of the attack
would do: the gradient steps and candidate forwards in bfloat16; the few-shot prefix cache, the meaning filter, the
clean chain and the regeneration float32), on
``--items`` seeded word problems (seed 7), the two taking turns item by item (A B, then B A). Printed per method:
seconds per item both ways and their ratio, and each item's outcome under both (the family's rules without a
judge: ``clean_wrong`` when the clean chain states a false equation, ``invalid``, ``wrong`` when the answer
changes, ``success`` when the answer is kept and the chain states a false equation, ``kept`` otherwise), with the
items whose outcome, perturbed question (token) and regenerated chain agree.

    python benchmarks/attack_speed.py --dtype bf16 --items 8

``--compare``: each attacked item as the family attacks it (the methods' searches one after the other, then
their chains regenerated as one batch; the clean chain not counted) with the reuse of computed parts on and off,
on ``--items`` seeded word problems (seed 7), the two taking turns item by item (A B, then B A). *Off* runs the
same code with these switched off: no cache of the chain beyond the few-shot prefix (``Attacker.stem_cache``
gives None), logits of every position after the cache (no forward is given ``logits_to_keep``), no objective or
meaning-filter cosine remembered between calls, and the regenerated chains decoded from the whole prompt
(``greedy_batch`` without the prefix's cache). Printed: seconds per item both ways and their ratio, the search and
regeneration parts, and the items whose perturbed questions (token, random), outcomes and regenerated chains
agree. ``--only`` restricts it to some of the word problems.

    python benchmarks/attack_speed.py --compare --items 8

``--regeneration``: the perturbed chains decoded as the family decodes them now (the chains of consecutive items
together, up to the attacker's rows, a stopped row leaving the batch: ``reasonscope.attack.item.finish_items``)
against item by item with every row kept to the batch's end (the decoder before, written out here). The searches
run once per item (reuse on, as the family runs); then each way decodes every item's chains, in rounds taking
turns (A B, then B A; ``--rounds``). Printed: the searches per item, the regeneration per item each way (median of
the rounds) and their ratio, the seconds per attacked item both ways (searches plus regeneration), and the items
whose chains and outcomes agree.

    python benchmarks/attack_speed.py --regeneration --items 16 --rounds 2
"""

from __future__ import annotations

import argparse
import time

BASE = "Lena has 12 apples and gets 7 more. How many apples does Lena have now?"
PAD = "The weather was mild that day and the market square was busy with people. "


def outcome(attacker_item, clean, res) -> str:
    """The outcome of one attack by the family's rules without a judge (module docstring)."""
    from reasonscope.attack.answers import same_answer
    from reasonscope.attack.arithmetic import check_arithmetic

    if check_arithmetic(clean.reasoning).false:
        return "clean_wrong"
    if res.invalid:
        return "invalid"
    if not same_answer(res.chain.answer, clean.answer, attacker_item):
        return "wrong"
    return "success" if check_arithmetic(res.chain.reasoning).false else "kept"


def dtype_agreement(attacker, n_items: int, methods: list[str]) -> None:
    """The token and embedding searches in float32 against bfloat16 autocast on seeded word problems (docstring)."""
    import contextlib

    import torch

    from reasonscope.attack.answers import is_correct
    from reasonscope.data.word_problems import word_problem_items

    items = word_problem_items(n_items, seed=7)
    cleans = attacker.answer_first_many([attacker.layout_for(it.input) for it in items])
    attacked = [(it, c) for it, c in zip(items, cleans, strict=True) if is_correct(c.answer, it) and c.reasoning]
    print(f"{len(items)} word problems (seed 7), {len(attacked)} answered correctly with a chain: attacked")
    @contextlib.contextmanager
    def bf16_objective():
        """The attack objective's forward and backward passes (``losses``, ``_objectives``, ``token_gradients``) under
        bfloat16 autocast;
        the meaning filter and the rest of the search as they are."""

        def autocast(fn):
            def run(*a, **k):
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    return fn(*a, **k)
            return run

        attacker.losses, attacker._objectives = autocast(attacker.losses), autocast(attacker._objectives)
        attacker.token_gradients = autocast(attacker.token_gradients)
        try:
            yield
        finally:
            del attacker.losses, attacker._objectives, attacker.token_gradients  # the class's methods again

    contexts = {"float32": contextlib.nullcontext, "bf16": bf16_objective}
    for method in [m for m in methods if m in ("token", "embedding")]:
        seconds = {k: [] for k in contexts}
        outcomes = {k: [] for k in contexts}
        same_question = same_chain = 0
        for n, (it, clean) in enumerate(attacked):
            layout = attacker.layout_for(it.input, clean)
            attacker.prefix_cache(layout)  # the few-shot prefix's cache computed in float32, outside the timings
            got = {}
            for dtype in (list(contexts) if n % 2 == 0 else list(contexts)[::-1]):
                attacker.forget()  # nothing remembered from the other precision
                t0 = time.perf_counter()
                with contexts[dtype]():
                    p = attacker.search(method, layout, f"bench-{it.id}", it.input)
                res = attacker.regenerate([p])[0]
                seconds[dtype].append(time.perf_counter() - t0)
                got[dtype] = res
                outcomes[dtype].append(outcome(it, clean, res))
            same_question += got["float32"].perturbed_question == got["bf16"].perturbed_question
            same_chain += got["float32"].chain == got["bf16"].chain
        agree = sum(a == b for a, b in zip(outcomes["float32"], outcomes["bf16"], strict=True))
        counts = {k: {o: v.count(o) for o in sorted(set(v))} for k, v in outcomes.items()}
        f32, b16 = (sum(seconds[k]) / len(seconds[k]) for k in contexts)
        print(f"{method}: float32 {f32:.1f} s/item, bf16 {b16:.1f} s/item (float32 / bf16 {f32 / b16:.2f}; search "
              f"and regeneration); outcomes float32 {counts['float32']}, bf16 {counts['bf16']}; the same outcome for "
              f"{agree} of {len(attacked)} items, the same perturbed question for {same_question}, the same "
              f"regenerated chain for {same_chain}")
        print("  per item (float32 / bf16): " + ", ".join(f"{it.id} {a}/{b}" for (it, _c), a, b in
                                                          zip(attacked, outcomes["float32"], outcomes["bf16"],
                                                              strict=True)), flush=True)


def reuse_on_off(attacker, n_items: int, methods: list[str], only: list[str] | None = None) -> None:
    """Seconds per attacked item with the reuse of computed parts on and off, side by side (docstring)."""
    import contextlib

    from reasonscope.attack import attacker as attacker_module
    from reasonscope.attack.answers import is_correct
    from reasonscope.data.word_problems import word_problem_items
    from reasonscope.models import forward_args

    items = word_problem_items(n_items, seed=7)
    cleans = attacker.answer_first_many([attacker.layout_for(it.input) for it in items])
    attacked = [(it, c) for it, c in zip(items, cleans, strict=True) if is_correct(c.answer, it) and c.reasoning
                and (not only or it.id in only)]
    print(f"{len(items)} word problems (seed 7), {len(attacked)} answered correctly with a chain: attacked; methods "
          f"{', '.join(methods)}")

    @contextlib.contextmanager
    def off():
        """The reuse switched off: the prefix cache only, every logit, nothing remembered, whole prompts decoded."""
        takes = forward_args.forward_takes

        def forgetting(fn):
            def run(*a, **k):
                attacker.forget()
                return fn(*a, **k)
            return run

        forward_args.forward_takes = attacker_module.forward_takes = \
            lambda model, name: name != "logits_to_keep" and takes(model, name)
        attacker.stem_cache = lambda layout, n: None
        attacker.objective, attacker._similarities = forgetting(attacker.objective), forgetting(attacker._similarities)
        whole = type(attacker).greedy_batch
        attacker.greedy_batch = lambda rows, max_new, stop, prefix_cache=None: whole(attacker, rows, max_new, stop)
        try:
            yield
        finally:
            forward_args.forward_takes = attacker_module.forward_takes = takes
            # the class's methods again
            del attacker.stem_cache, attacker.objective, attacker._similarities, attacker.greedy_batch

    variants = {"off": off, "on": contextlib.nullcontext}
    seconds = {k: [] for k in variants}
    search = {k: [] for k in variants}
    outcomes = {k: [] for k in variants}
    same_question = same_chain = 0
    for n, (it, clean) in enumerate(attacked):
        layout = attacker.layout_for(it.input, clean)
        attacker.prefix_cache(layout)  # the few-shot prefix's cache, shared by both, outside the timings
        got = {}
        for name in (list(variants) if n % 2 == 0 else list(variants)[::-1]):
            attacker.forget()
            t0 = time.perf_counter()
            with variants[name]():
                searched = [attacker.search(m, layout, f"bench-{it.id}", it.input) for m in methods]
                t1 = time.perf_counter()
                results = attacker.regenerate(searched)
            seconds[name].append(time.perf_counter() - t0)
            search[name].append(t1 - t0)
            got[name] = results
            outcomes[name].append(tuple(outcome(it, clean, r) for r in results))
        same_question += all(a.perturbed_question == b.perturbed_question for a, b in zip(*got.values(), strict=True))
        same_chain += all(a.chain == b.chain for a, b in zip(*got.values(), strict=True))
        print(f"  {it.id}: off {seconds['off'][-1]:.1f} s, on {seconds['on'][-1]:.1f} s; outcomes "
              f"{outcomes['off'][-1]} / {outcomes['on'][-1]}", flush=True)
    mean = {k: sum(v) / len(v) for k, v in seconds.items()}
    mean_search = {k: sum(v) / len(v) for k, v in search.items()}
    agree = sum(a == b for a, b in zip(outcomes["off"], outcomes["on"], strict=True))
    print(f"per attacked item: off {mean['off']:.1f} s (search {mean_search['off']:.1f}, regeneration "
          f"{mean['off'] - mean_search['off']:.1f}), on {mean['on']:.1f} s (search "
          f"{mean_search['on']:.1f}, regeneration {mean['on'] - mean_search['on']:.1f}); off / on "
          f"{mean['off'] / mean['on']:.2f} (search {mean_search['off'] / mean_search['on']:.2f})")
    print(f"of {len(attacked)} items: the same outcomes for {agree}, the same perturbed questions for "
          f"{same_question}, the same regenerated chains for {same_chain}")


def _greedy_keeping_rows(attacker, rows, max_new, stop, prefix_cache=None):
    """The decoder before stopped rows left the batch: every row runs to the last step (the former loop)."""
    import torch

    from reasonscope.attack.attacker import _padding
    from reasonscope.models.forward_args import cache_argument, output_cache

    if not rows:
        return []
    emb = attacker.model.get_input_embeddings()
    n = len(rows)
    out, live = [[] for _ in rows], [True] * n
    cache_name = cache_argument(attacker.model) or "past_key_values"
    with torch.no_grad():
        res, mask = attacker.prompt_forward(rows, prefix_cache)
        for step in range(max_new):
            nxt = res.logits[:, -1].argmax(-1).tolist()
            for i, t in enumerate(nxt):
                if not live[i]:
                    continue
                if t == attacker.tokenizer.eos_token_id or stop(out[i] + [t]):
                    live[i] = False
                else:
                    out[i].append(t)
            if not any(live) or step + 1 == max_new:
                break
            if mask is not None:
                mask = torch.cat([mask, mask.new_ones((n, 1))], dim=1)
            res = attacker.model(inputs_embeds=emb(torch.tensor(nxt, device=attacker.device)[:, None]),
                                 **{cache_name: output_cache(res)}, use_cache=True, **_padding(mask, 1))
    return out


def regeneration(attacker, n_items: int, methods: list[str], rounds: int) -> None:
    """The perturbed chains decoded together and item by item, side by side (module docstring)."""
    import copy
    import statistics

    from reasonscope.attack.answers import is_correct
    from reasonscope.attack.item import finish_items, search_item
    from reasonscope.data.word_problems import word_problem_items

    items = word_problem_items(n_items, seed=7)
    cleans = attacker.answer_first_many([attacker.layout_for(it.input) for it in items])
    attacked = [(it, c) for it, c in zip(items, cleans, strict=True) if is_correct(c.answer, it) and c.reasoning]
    print(f"{len(items)} word problems (seed 7), {len(attacked)} answered correctly with a chain: attacked; methods "
          f"{', '.join(methods)}; {attacker.batch_size} rows decoded together")
    t0 = time.perf_counter()
    searched = [search_item(attacker, it, f"bench-{it.id}", methods, clean=c) for it, c in attacked]
    search_s = (time.perf_counter() - t0) / len(attacked)
    per = max(1, attacker.batch_size // len(methods))  # items per decode, as the local executor groups them

    def now():
        return [r for i in range(0, len(searched), per) for r in finish_items(attacker, searched[i:i + per])]

    def before():
        attacker.greedy_batch = lambda rows, max_new, stop, prefix_cache=None: _greedy_keeping_rows(
            attacker, rows, max_new, stop, prefix_cache)
        try:
            return [r for s in searched for r in finish_items(attacker, [s])]
        finally:
            del attacker.greedy_batch

    ways = {"item by item, rows kept": before, "items together, stopped rows leave": now}
    seconds = {k: [] for k in ways}
    records = {}
    for r in range(rounds):
        for name in (list(ways) if r % 2 == 0 else list(ways)[::-1]):
            t = time.perf_counter()
            records[name] = copy.deepcopy(ways[name]())  # finish_items fills the same record dicts each way
            seconds[name].append((time.perf_counter() - t) / len(attacked))
            print(f"  round {r + 1}, {name}: {seconds[name][-1]:.2f} s per item", flush=True)
    median = {k: statistics.median(v) for k, v in seconds.items()}
    (a, b) = ways
    print(f"searches: {search_s:.2f} s per item")
    print(f"regeneration per item: {a} {median[a]:.2f} s, {b} {median[b]:.2f} s; {median[a] / median[b]:.2f}x")
    print(f"per attacked item: {a} {search_s + median[a]:.2f} s, {b} {search_s + median[b]:.2f} s")
    same_chains = same_outcomes = 0
    for (it, clean), ra, rb in zip(attacked, records[a], records[b], strict=True):
        ma, mb = ra["methods"], rb["methods"]
        same_chains += all(ma[m]["chain"] == mb[m]["chain"] for m in methods)
        oa = [outcome(it, clean, _Result(ma[m])) for m in methods]
        same_outcomes += oa == [outcome(it, clean, _Result(mb[m])) for m in methods]
    print(f"of {len(attacked)} items: the same chains for {same_chains}, the same outcomes for {same_outcomes}")


class _Result:
    """A method's record read back as the attributes :func:`outcome` reads."""

    def __init__(self, record: dict):
        from reasonscope.attack.attacker import Chain

        self.invalid, self.chain = record["invalid"], Chain(**record["chain"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pads", type=int, nargs="+", default=[0, 2, 6], help="context sentences added")
    parser.add_argument("--methods", nargs="+", default=["random", "embedding", "token"])
    parser.add_argument("--dtype", choices=("float32", "bf16"), default="float32", help="bf16: the searches in float32 "
                        "against bfloat16 autocast on --items word problems, side by side, with the outcomes")
    parser.add_argument("--items", type=int, default=8, help="word problems for --dtype bf16 and --compare")
    parser.add_argument("--only", nargs="+", help="--compare: only these word problems (e.g. wp-2)")
    parser.add_argument("--regeneration", action="store_true", help="the perturbed chains of several items decoded "
                        "together (stopped rows leaving the batch) against item by item (rows kept), side by side")
    parser.add_argument("--rounds", type=int, default=2, help="--regeneration: rounds of both ways, taking turns")
    parser.add_argument("--compare", action="store_true", help="each item's attack with the reuse of computed parts "
                        "on and off, side by side, on --items word problems")
    args = parser.parse_args()

    import torch

    from reasonscope.attack.attacker import AttackSettings
    from reasonscope.attack.executor import make_attacker
    from reasonscope.plan import AttackConfig, ModelConfig

    torch.set_num_threads(2)
    settings = AttackSettings()
    start = time.perf_counter()
    attacker = make_attacker(ModelConfig(spec="smollm2"), AttackConfig(), settings)
    attacker.word_vocabulary()
    print(f"load model + meaning filter + word vocabulary: {time.perf_counter() - start:.1f} s "
          f"({len(attacker.word_vocabulary())} word tokens)")
    if args.dtype == "bf16":
        dtype_agreement(attacker, args.items, args.methods)
        return
    if args.compare:
        reuse_on_off(attacker, args.items, args.methods, args.only)
        return
    if args.regeneration:
        regeneration(attacker, args.items, args.methods, args.rounds)
        return
    rows = []
    for pad in args.pads:
        question = PAD * pad + BASE
        clean = attacker.answer_first(attacker.layout_for(question))
        layout = attacker.layout_for(question, clean)
        times = {}
        for method in args.methods:
            t0 = time.perf_counter()
            if method == "token":
                res = attacker.token_attack(layout, f"bench-{pad}", question)
            elif method == "embedding":
                res = attacker.embedding_attack(layout, f"bench-{pad}")
            else:
                res = attacker.random_attack(layout, f"bench-{pad}", question)
            total = time.perf_counter() - t0
            regen = res.details["regeneration_s"]
            times[method] = (total, total - regen, len(attacker.tokenizer(res.chain.reasoning)["input_ids"]),
                             res.steps_done)
        rows.append((len(layout.question), len(layout.cot), times))
    first = rows[0][2]
    print("seconds per attacked item: total, the attack alone (total minus regenerating the chain, whose length "
          "varies with what the model writes), the regenerated chain's tokens, the rounds run (token level stops "
          "early when no candidate improves), and the attack alone per round against the shortest question")
    print(f"{'q tokens':>8} {'cot':>4} " + " ".join(f"{m:>30} {'growth':>6}" for m in args.methods))
    for q, c, times in rows:
        cells = []
        for m in args.methods:
            total, alone, toks, rounds = times[m]
            per = alone / max(1, rounds)
            per0 = first[m][1] / max(1, first[m][3])
            cells.append(f"{total:>7.1f}s ({alone:>5.1f}s) {toks:>3}t {rounds:>2}r {per / per0:>6.2f}")
        print(f"{q:>8} {c:>4} " + " ".join(cells))


if __name__ == "__main__":
    main()
