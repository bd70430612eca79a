"""Shared fixtures: tiny models built in the test session (see ``reasonscope.testing``). No download."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="session")
def tiny_causal_lm(tmp_path_factory):
    from reasonscope.testing import build_tiny_causal_lm

    return build_tiny_causal_lm(tmp_path_factory.mktemp("tiny-llama"))


@pytest.fixture(scope="session")
def tiny_nli(tmp_path_factory):
    from reasonscope.testing import build_tiny_nli

    return build_tiny_nli(tmp_path_factory.mktemp("tiny-nli"))


@pytest.fixture(scope="session")
def tiny_seq2seq(tmp_path_factory):
    from reasonscope.testing import build_tiny_seq2seq

    return build_tiny_seq2seq(tmp_path_factory.mktemp("tiny-t5"))
