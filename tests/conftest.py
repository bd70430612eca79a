"""Shared fixtures: tiny models built in the test session (see ``reasonscope.testing``). No download."""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# The suite sees the built-in five families only, whatever plugin is installed (the schemas and goldens are
# theirs); tests/test_plugins*.py hand the registry their plugins, or run a child process with autoload on.
os.environ.setdefault("REASONSCOPE_DISABLE_PLUGIN_AUTOLOAD", "1")


BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture
def chromium(tmp_path):
    """``chromium(window="1300,900")``: Debian's headless Chromium through Selenium, with its console log kept.

    The flags keep it off the network (this machine has none) and Selenium Manager from downloading a driver.
    Tests that use it skip themselves when ``chromium`` / ``chromedriver`` are not installed.
    """
    import shutil

    drivers = []

    def start(window: str = "1300,900"):
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        os.environ.setdefault("SE_OFFLINE", "true")  # never let Selenium Manager download anything
        opts = webdriver.ChromeOptions()
        opts.binary_location = shutil.which("chromium")
        for arg in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync", "--no-first-run", f"--window-size={window}",
                    f"--user-data-dir={tmp_path / f'chrome-profile-{len(drivers)}'}"):
            opts.add_argument(arg)
        opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        drivers.append(webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=opts))
        return drivers[-1]

    yield start
    for driver in drivers:
        try:
            driver.quit()
        except Exception:  # noqa: BLE001  (already quit by the test)
            pass


@pytest.fixture
def load_benchmark():
    """``load_benchmark(name)``: the script ``benchmarks/<name>.py`` as a module (the scripts are not a package)."""
    def load(name: str):
        spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    return load


EMBEDDED_CONVERSION = re.compile(r"smollm2-135m-instruct-[0-9a-f]{16}(\.f32\.gguf)?")
"""The names of the embedded model's conversions in a user cache (reasonscope.models.smollm2)."""


@pytest.fixture(scope="session", autouse=True)
def _user_cache_of_the_session(tmp_path_factory):
    """The test session's user cache: a temporary folder (``REASONSCOPE_CACHE_DIR``, inherited by child processes).

    Nothing the tests write lands in the user's cache (the re-run records of every ``run``, the ONNX conversions
    of the tiny models, digests); the conversions are made once per session and reused by its tests. The
    embedded model's conversions are what tests must not make again each session (a float32 copy of ~10 s, a
    torch conversion of ~25 s): those complete in the user's cache are linked in, and those this session had to
    make for the installed GGUF file are moved there at its end (as a run outside the tests would have kept
    them). A test that sets ``REASONSCOPE_CACHE_DIR`` itself has its own folder as before.
    """
    from reasonscope.models import smollm2
    from reasonscope.storage.user_cache import cache_root

    user = cache_root()
    session = tmp_path_factory.mktemp("user-cache")
    complete = {True: smollm2._converted, False: Path.is_file}  # is a folder: check
    if user.is_dir():
        for entry in user.iterdir():
            if EMBEDDED_CONVERSION.fullmatch(entry.name) and complete[entry.is_dir()](entry):
                (session / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
    mp = pytest.MonkeyPatch()
    mp.setenv("REASONSCOPE_CACHE_DIR", str(session))
    try:
        yield session
    finally:
        mp.undo()
        _keep_the_embedded_conversions(session, user, complete)


def _keep_the_embedded_conversions(session: Path, user: Path, complete) -> None:
    """Move the embedded model's conversions this session made for the installed GGUF file into the user cache."""
    import shutil

    from reasonscope.models import smollm2
    from reasonscope.storage.digests import sha256_file
    from reasonscope.storage.user_cache import publish_folder

    made = [e for e in session.iterdir() if EMBEDDED_CONVERSION.fullmatch(e.name) and not e.is_symlink()
            and complete[e.is_dir()](e)]
    try:
        digest = sha256_file(smollm2.gguf_folder() / smollm2.GGUF_FILE) if made else None
    except (OSError, smollm2.ProviderUnavailable):
        return
    for entry in made:
        if not entry.name.startswith(f"smollm2-135m-instruct-{digest[:16]}"):  # of a GGUF file made by a test
            continue
        target = user / entry.name
        if complete[entry.is_dir()](target):
            continue
        try:
            user.mkdir(parents=True, exist_ok=True)
            tmp = user / f"{entry.name}.tmp{os.getpid()}"
            shutil.move(entry, tmp)
            if entry.name.endswith(".gguf"):
                tmp.replace(target)
            else:
                publish_folder(tmp, target, smollm2._converted)
        except OSError:  # a user cache that cannot be written: the next session converts again
            continue


@pytest.fixture(autouse=True)
def _auto_runtime_is_torch(monkeypatch):
    """``runtime: auto`` means torch in the tests (known values are torch's); tests of auto set it back."""
    from reasonscope.models import smollm2
    from reasonscope.scorers import runtime_choice

    monkeypatch.setattr(runtime_choice, "AUTO_ORDER", ("torch",))
    monkeypatch.setattr(smollm2, "AUTO_ORDER", ("torch",))  # the embedded model's runtime too


@pytest.fixture(scope="session")
def tiny_causal_lm(tmp_path_factory):
    from reasonscope.testing import build_tiny_causal_lm

    return build_tiny_causal_lm(tmp_path_factory.mktemp("tiny-llama"))


@pytest.fixture(scope="module", params=["llama", "gpt2"])
def sharp(request, tiny_causal_lm):
    """A tiny model with the tiny Llama's tokenizer and large random weights (init std 1.0, seed 3): a Llama
    (rotary positions) or a GPT-2 (learned absolute positions). Unlike the default tiny model (std 0.02),
    its greedy continuation depends on the input, so rows differ and a wrong mask or wrong positions change
    the tokens. Checked in test_attack_batching.py: the top-2 logit gap along every path is far above float
    rounding, so decoding a row alone and in a padded batch must agree exactly. Used by the attack's
    batching and prefix-cache tests."""
    import torch
    from transformers import AutoConfig, AutoTokenizer, GPT2Config, GPT2LMHeadModel, LlamaForCausalLM

    tok = AutoTokenizer.from_pretrained(tiny_causal_lm)
    torch.manual_seed(3)
    if request.param == "llama":
        cfg = AutoConfig.from_pretrained(tiny_causal_lm)
        cfg.initializer_range = 1.0
        return LlamaForCausalLM(cfg).eval(), tok
    cfg = GPT2Config(vocab_size=len(tok), n_embd=32, n_layer=2, n_head=4, n_positions=2048, initializer_range=1.0,
                     bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    return GPT2LMHeadModel(cfg).eval(), tok


@pytest.fixture(scope="session")
def tiny_nli(tmp_path_factory):
    from reasonscope.testing import build_tiny_nli

    return build_tiny_nli(tmp_path_factory.mktemp("tiny-nli"))


@pytest.fixture(scope="session")
def tiny_seq2seq(tmp_path_factory):
    from reasonscope.testing import build_tiny_seq2seq

    return build_tiny_seq2seq(tmp_path_factory.mktemp("tiny-t5"))


FIVE_QUESTION = "Ana has 3 apples and gets 5 more . How many apples does Ana have ?"


@pytest.fixture(scope="session")
def five_family_run(tmp_path_factory, tiny_causal_lm, tiny_seq2seq):
    """A finished run with all five families (mock models, mock judges, the tiny seq2seq evaluator and the
    tiny causal LM attacked with a scripted answer-first chain); returns its run directory. Slow (~1 min)."""
    import json

    from reasonscope.attack.attacker import Attacker, Chain
    from reasonscope.attack.layout import encode
    from reasonscope.pipeline.runner import Runner
    from reasonscope.plan import parse_plan
    from reasonscope.testing import scripted_chains

    def scripted(self, layout, question_embeds=None):  # sound clean chain; any perturbation breaks it
        if question_embeds is None and layout.question == encode(self.tokenizer, " " + FIVE_QUESTION):
            return Chain("8", "3 + 5 = 8 apples.")
        return Chain("8", "3 + 5 = 9 apples.")

    out = tmp_path_factory.mktemp("five")
    data = out / "q.jsonl"
    data.write_text(json.dumps({"id": "q1", "input": FIVE_QUESTION, "target": 8, "answer_type": "number"}) + "\n")
    plan = parse_plan({
        "experiment": {"name": "five", "seed": 7, "output_dir": str(out)},
        "models": [{"spec": "mock/reasoner", "name": "mock-a"},
                   {"spec": "mock/reasoner", "name": "mock-b", "options": {"accuracy": 0.4, "seed": 5}},
                   {"spec": f"hf/{tiny_causal_lm}", "name": "tiny"}],
        "datasets": [{"name": "synthetic", "format": "synthetic", "size": 4},
                     {"name": "qs", "format": "jsonl", "path": str(data)}],
        "families": {
            "behavior": {"samples": 2, "paraphrases": 1, "nli": {"backend": "none"},
                         "similarity": {"method": "embedding"}},
            "evidence": {"train": {"name": "tr", "format": "topics", "size": 60, "split": "train"},
                         "test": {"name": "te", "format": "topics", "size": 8, "split": "test"},
                         "n_permutations": 200},
            "attributes": {"judges": [{"spec": "mock/judge", "name": "j1"},
                                      {"spec": "mock/judge", "name": "j2", "options": {"seed": 4}}],
                           "automatic": None, "rating_resamples": 20},
            "information": {"train": {"name": "info-train", "format": "synthetic", "size": 4},
                            "test": {"name": "info-test", "format": "synthetic", "size": 3},
                            "evaluator": str(tiny_seq2seq), "epochs": 1, "probe_epochs": 1, "larev_epochs": 1,
                            "lr": 0.001},
            "attack": {"steps": 1, "candidates": 4, "min_similarity": None, "cot_tokens": 8,
                       "judge": {"spec": "mock/judge", "options": {"ok_rate": 1}}}},
        "stats": {"n_resamples": 200}})
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Attacker, "answer_first_many", scripted_chains(scripted))
        return Runner(plan, show_progress=False).run().run_dir
