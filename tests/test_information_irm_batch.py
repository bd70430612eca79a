"""Phi_LA's one-pass training step: the IRMv1 penalty and the per-environment losses from one batch whose
rows are the environments (``irm_penalty_rows``), and the whole LAREV loss from one encoder pass, equal the
per-environment computation (one forward and one dummy scale per environment, b~ encoded alone)."""

from __future__ import annotations

import copy
import math

import pytest
import torch

from reasonscope.information.evaluator import load_evaluator, nll_from_logits
from reasonscope.information.training import (
    _encoder,
    adamw,
    freeze_encoder,
    irm_penalty,
    irm_penalty_rows,
    larev_loss,
    probe_loss,
    warmup,
)
from reasonscope.information.variants import baseline_input, rationale_input
from tolerance import assert_close_to_scale

LN3 = math.log(3.0)


def _value(t) -> float:
    return float(t.detach())


def _hand_batch():
    """Two environments over a 2-word vocabulary. Row 0: one scored token (z = [0, ln 3], y = 0) and one
    padding token (-100) with large logits that must not count. Row 1: z = [ln 3, 0], y = 0 and z = [0, 0],
    y = 1."""
    logits = torch.tensor([[[0.0, LN3], [5.0, -5.0]],
                           [[LN3, 0.0], [0.0, 0.0]]])
    labels = torch.tensor([[0, -100], [0, 1]])
    return logits, labels


def test_per_row_cross_entropy_against_hand_values():
    logits, labels = _hand_batch()
    rows = nll_from_logits(logits, labels, per_row=True)
    # p = softmax(z): row 0 p(y) = 1/4; row 1 p(y) = 3/4 and 1/2
    assert rows.tolist() == pytest.approx([math.log(4), (math.log(4 / 3) + math.log(2)) / 2], rel=1e-5)
    whole = nll_from_logits(logits, labels)  # the mean over all three scored tokens
    assert float(whole) == pytest.approx((math.log(4) + math.log(4 / 3) + math.log(2)) / 3, rel=1e-5)
    scaled = nll_from_logits(logits, labels, torch.tensor([0.0, 1.0]), per_row=True)  # w_0 = 0: uniform, ln 2
    assert scaled.tolist() == pytest.approx([math.log(2), float(rows[1])], rel=1e-5)
    empty = nll_from_logits(logits, torch.tensor([[-100, -100], [0, 1]]), per_row=True)
    assert float(empty[0]) == 0.0


def test_batched_penalty_against_hand_values_and_the_per_environment_one():
    logits, labels = _hand_batch()
    penalty, losses = irm_penalty_rows(logits, labels)
    # d CE(w z, y) / d w at w = 1 = E_p[z] - z_y per token, averaged over the row's scored tokens:
    # row 0: 3/4 ln 3 - 0; row 1: ((3/4 ln 3 - ln 3) + (0 - 0)) / 2 = -ln 3 / 8
    assert _value(penalty) == pytest.approx((0.75 * LN3) ** 2 + (LN3 / 8) ** 2, rel=1e-5)
    assert losses.tolist() == pytest.approx([math.log(4), (math.log(4 / 3) + math.log(2)) / 2], rel=1e-5)
    one_by_one, env_losses = irm_penalty([lambda w, i=i: nll_from_logits(logits[i:i + 1], labels[i:i + 1], w)
                                          for i in range(2)])
    assert _value(penalty) == pytest.approx(_value(one_by_one), rel=1e-5)
    assert losses.tolist() == pytest.approx([_value(v) for v in env_losses], rel=1e-5)


def test_batched_penalty_is_differentiable_like_the_per_environment_one():
    torch.manual_seed(0)
    base = torch.randn(3, 4, 5)
    labels = torch.tensor([[1, 2, -100, -100], [0, 4, 3, -100], [2, 2, 2, 1]])
    grads = []
    for batched in (True, False):
        x = base.clone().requires_grad_()
        if batched:
            penalty, losses = irm_penalty_rows(x, labels)
        else:
            penalty, losses = irm_penalty([lambda w, i=i, x=x: nll_from_logits(x[i:i + 1], labels[i:i + 1], w)
                                           for i in range(3)])
        (penalty + sum(losses)).backward()
        grads.append(x.grad)
    assert_close_to_scale(grads[0], grads[1])
    assert float(grads[0][0, 2:].abs().sum()) == 0.0  # padding positions get no gradient


# -- the whole LAREV loss on a tiny T5 ----------------------------------------------------------------

def _per_environment_loss(phi_la, psi, env_batch, masked_batch, step, total, lambda_irm, lambda_probe):
    """The LAREV loss computed term by term (the previous implementation): one forward and one dummy
    scale per environment, b~ encoded alone."""
    n_env = env_batch["input_ids"].shape[0]
    penalty, losses = irm_penalty([lambda w, i=i: phi_la.loss({k: v[i:i + 1] for k, v in env_batch.items()},
                                                              scale=w) for i in range(n_env)])
    hidden = _encoder(phi_la.model)(input_ids=masked_batch["input_ids"],
                                    attention_mask=masked_batch["attention_mask"]).last_hidden_state
    probe = probe_loss(psi, hidden, masked_batch["attention_mask"], masked_batch["labels"])
    return sum(losses) / n_env + warmup(lambda_irm, step, total) * penalty \
        - warmup(lambda_probe, step, total) * probe


@pytest.fixture
def models(tiny_seq2seq):
    phi_la = load_evaluator(str(tiny_seq2seq))
    psi = copy.deepcopy(phi_la)
    torch.manual_seed(1)
    with torch.no_grad():  # a probe decoder that differs from Phi_LA's
        for p in psi.model.parameters():
            p.add_(0.1 * torch.randn_like(p))
    freeze_encoder(psi)
    for p in psi.model.parameters():
        p.requires_grad_(False)
    phi_la.model.eval()  # no dropout: the two computations see the same network
    psi.model.eval()
    return phi_la, psi


ENVS = {  # r + b_e of different token lengths (the batch pads them), and b~ shorter or longer than all of them
    "b~ shorter": ([rationale_input("Ana has 3 apples and gets 5 more", b) for b in
                    ("The answer is 8 apples", "The answer is [MASK] apples", "The answer is not 8 or 9 apples")],
                   baseline_input("The answer is [MASK]"), "8"),
    "b~ longer": ([rationale_input("so", b) for b in ("yes", "[MASK] [MASK]", "not yes at all")],
                  baseline_input("Is it true that Ana has 3 apples and gets 5 more because [MASK] is the answer"),
                  "yes"),
}


@pytest.mark.parametrize("case", sorted(ENVS))
def test_one_pass_larev_loss_equals_the_per_environment_one(models, case):
    phi_la, psi = models
    env_inputs, masked, target = ENVS[case]
    env_batch = phi_la.batch(env_inputs, [target] * 3)
    masked_batch = psi.batch([masked], [target])
    lengths = env_batch["attention_mask"].sum(1).tolist()
    assert len(set(lengths)) == 3  # three different lengths: two rows are padded
    width = masked_batch["input_ids"].shape[1]
    assert width < min(lengths) if case == "b~ shorter" else width > max(lengths)  # b~ or the envs padded
    step, total, lam_irm, lam_probe = 3, 3, 5.0, 0.5  # after the warm-up: every term at its full weight
    results = []
    for fn in (larev_loss, None):
        phi_la.model.zero_grad(set_to_none=True)
        if fn is None:
            loss = _per_environment_loss(phi_la, psi, env_batch, masked_batch, step, total, lam_irm, lam_probe)
        else:
            loss = fn(phi_la, phi_la.model, psi, (env_batch, masked_batch), step, total, lambda_irm=lam_irm,
                      lambda_probe=lam_probe)
        loss.backward()
        results.append((_value(loss), {n: p.grad.clone() for n, p in phi_la.model.named_parameters()
                                      if p.grad is not None}))
    (new, new_grads), (old, old_grads) = results
    assert new == pytest.approx(old, rel=1e-5)  # float32 sums in another order: relative to the loss
    assert new_grads.keys() == old_grads.keys() and len(new_grads) > 10
    for name, g in new_grads.items():
        assert_close_to_scale(g, old_grads[name], name=name)
    assert not any(p.grad is not None for p in psi.model.parameters())  # the probe stays frozen


def test_penalty_of_padded_rows_equals_each_environment_tokenized_alone(models):
    phi_la, _ = models
    env_inputs, _, target = ENVS["b~ shorter"]
    penalty, losses = irm_penalty_rows(*phi_la.logits(phi_la.batch(env_inputs, [target] * 3)))
    alone = [phi_la.batch([x], [target]) for x in env_inputs]  # no padding at all
    ref_penalty, ref_losses = irm_penalty([lambda w, b=b: phi_la.loss(b, scale=w) for b in alone])
    assert _value(penalty) == pytest.approx(_value(ref_penalty), rel=1e-5, abs=1e-7)
    assert losses.tolist() == pytest.approx([_value(v) for v in ref_losses], rel=1e-5, abs=1e-5)
    assert _value(penalty) > 0  # a real penalty, not a degenerate zero


def test_fused_adamw_makes_the_update_of_the_loop_implementation():
    torch.manual_seed(0)
    start = [torch.randn(40, 8), torch.randn(8)]
    fused, plain = ([p.clone().requires_grad_() for p in start] for _ in range(2))
    opts = [adamw(fused, 1e-2), torch.optim.AdamW(plain, lr=1e-2)]
    assert opts[0].defaults["fused"] and not opts[1].defaults["fused"]
    for _ in range(5):
        grads = [torch.randn_like(p) for p in start]
        for params, opt in zip((fused, plain), opts, strict=True):
            for p, g in zip(params, grads, strict=True):
                p.grad = g.clone()
            opt.step()
    for a, b, s in zip(fused, plain, start, strict=True):
        assert not torch.equal(b, s)  # the parameters moved
        assert_close_to_scale(a, b)


def test_adamw_falls_back_to_the_loop_where_torch_has_no_fused_kernel(monkeypatch):
    real = torch.optim.AdamW

    def without_fused(params, lr, fused=None, **kwargs):
        if fused:
            raise RuntimeError("`fused=True` requires all the params to be floating point Tensors of supported devices")
        return real(params, lr=lr, **kwargs)

    monkeypatch.setattr(torch.optim, "AdamW", without_fused)
    opt = adamw([torch.zeros(3, requires_grad=True)], 1e-3)
    assert isinstance(opt, real) and not opt.defaults["fused"]
