"""Start-up cost: the intervals on scipy.special (no scipy.stats import), the report's figures without
pyplot, an up-to-date re-run that imports neither scipy.stats nor matplotlib, and the peer benchmark's
alternating-pairs helpers."""

from __future__ import annotations

import importlib.util
import io
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from scipy import stats
from typer.testing import CliRunner

from reasonscope.cli import app
from reasonscope.stats.intervals import bounded_mean, clopper_pearson, newcombe_paired, student_t

ROOT = Path(__file__).resolve().parents[1]


def test_clopper_pearson_equals_scipy_stats_on_a_grid():
    worst = 0.0
    for n in (1, 2, 3, 5, 10, 30, 100, 900):
        for k in sorted({0, 1, n // 3, n // 2, n - 1, n}):
            for confidence in (0.9, 0.95, 0.99):
                alpha = 1 - confidence
                low, high = clopper_pearson(k, n, confidence)
                ref_low = 0.0 if k == 0 else stats.beta.ppf(alpha / 2, k, n - k + 1)
                ref_high = 1.0 if k == n else stats.beta.ppf(1 - alpha / 2, k + 1, n - k)
                worst = max(worst, abs(low - ref_low), abs(high - ref_high))
                ci = stats.binomtest(k, n).proportion_ci(confidence, method="exact")
                assert low == pytest.approx(ci.low, abs=1e-12) and high == pytest.approx(ci.high, abs=1e-12)
    assert worst <= 1e-12


def test_clopper_pearson_hand_values():
    # 0 of 10: upper bound 1 - 0.025 ** (1 / 10); 10 of 10: lower bound 0.025 ** (1 / 10); 1 of 1: [0.025, 1]
    assert clopper_pearson(0, 10) == pytest.approx((0.0, 1 - 0.025 ** 0.1), abs=1e-14)
    assert clopper_pearson(0, 10)[1] == pytest.approx(0.30849710781876083, abs=1e-14)
    assert clopper_pearson(10, 10) == pytest.approx((0.025 ** 0.1, 1.0), abs=1e-14)
    assert clopper_pearson(1, 1) == pytest.approx((0.025, 1.0), abs=1e-14)
    # 1 of 2: lower = 1 - sqrt(0.975) (Beta(1, 2) quantile), upper = sqrt(0.975) (Beta(2, 1) quantile)
    assert clopper_pearson(1, 2) == pytest.approx((1 - math.sqrt(0.975), math.sqrt(0.975)), abs=1e-14)


def test_student_t_equals_scipy_stats_on_a_grid():
    rng = np.random.default_rng(3)
    for n in (2, 3, 5, 10, 31, 200, 5000):
        arr = rng.normal(size=n)
        for confidence in (0.8, 0.95, 0.99):
            q = stats.t.ppf(1 - (1 - confidence) / 2, n - 1)
            half = q * arr.std(ddof=1) / math.sqrt(n)
            low, high = student_t(arr, confidence)
            assert abs(low - (arr.mean() - half)) <= 1e-12 and abs(high - (arr.mean() + half)) <= 1e-12


def test_student_t_hand_value():
    # values 1 and 3: mean 2, s = sqrt(2), s / sqrt(n) = 1, t_(1, 0.975) = 12.706204736174...
    low, high = student_t(np.array([1.0, 3.0]))
    assert (low, high) == pytest.approx((2 - 12.706204736174707, 2 + 12.706204736174707), abs=1e-12)


def test_bounded_mean_and_newcombe_equal_their_scipy_stats_values(monkeypatch):
    import reasonscope.stats.intervals as intervals

    arr = np.array([0.2, 0.5, 0.9, 1.0, 0.4, 0.7])
    a = np.array([1, 1, 0, 1, 0, 1, 1, 0])
    b = np.array([0, 1, 0, 0, 0, 1, 1, 0])
    got = bounded_mean(arr, (0.0, 1.0)), newcombe_paired(a, b), bounded_mean(arr, (0.0, 1.0), 0.9)

    class Reference:  # the quantiles as scipy.stats computes them
        betaincinv = staticmethod(lambda a, b, q: stats.beta.ppf(q, a, b))
        stdtrit = staticmethod(lambda df, q: stats.t.ppf(q, df))
        ndtri = staticmethod(stats.norm.ppf)

    monkeypatch.setattr(intervals, "special", Reference)
    reference = bounded_mean(arr, (0.0, 1.0)), newcombe_paired(a, b), bounded_mean(arr, (0.0, 1.0), 0.9)
    assert np.allclose(np.array(got), np.array(reference), rtol=0, atol=1e-12)
    # by hand: n = 6, m = 0.6167, the Student t half-width t_(5, 0.975) s / sqrt(6) widens the score interval
    m, half = arr.mean(), 2.570581835636314 * arr.std(ddof=1) / math.sqrt(6)
    assert got[0][0] <= m - half and got[0][1] == pytest.approx(min(1.0, max(got[0][1], m + half)))


def heavy_modules(code: str) -> list[str]:
    probe = ("import atexit, sys\n"
             "atexit.register(lambda: print('HEAVY', sorted(m for m in ('scipy.stats', 'matplotlib', "
             "'matplotlib.pyplot', 'torch', 'pandas') if m in sys.modules)))\n" + code)
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT)
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("HEAVY")]
    assert line, out.stdout + out.stderr
    return eval(line[-1].removeprefix("HEAVY "))  # noqa: S307 (a list of names printed by the probe)


def test_cli_and_up_to_date_check_import_neither_scipy_stats_nor_matplotlib():
    assert heavy_modules("import reasonscope.cli.root, reasonscope.pipeline.up_to_date, "
                         "reasonscope.stats.intervals, reasonscope.stats.bootstrap, reasonscope.report.plots") == []


@pytest.mark.slow  # a first run loads the embedded MiniLM: 8-20 s on 2 cores
def test_an_up_to_date_rerun_imports_neither_scipy_stats_nor_matplotlib(tmp_path):
    plan = tmp_path / "plan.yaml"
    plan.write_text(yaml.safe_dump({
        "experiment": {"name": "u", "seed": 2, "output_dir": str(tmp_path / "out")},
        "models": [{"spec": "mock/reasoner", "name": "a", "max_tokens": 40}],
        "datasets": [{"name": "syn", "format": "synthetic", "size": 2}],
        "families": {"behavior": {"samples": 2, "paraphrases": 1, "nli": {"backend": "none"},
                                  "similarity": {"method": "embedding"}}},
        "stats": {"n_resamples": 200}}))
    first = CliRunner().invoke(app, ["run", str(plan)])
    assert first.exit_code == 0, first.output
    assert (tmp_path / "out" / "u" / "behavior_bars.png").is_file()
    code = (f"import sys\nsys.argv = ['reasonscope', 'run', {str(plan)!r}]\n"
            "from reasonscope.cli.process import main\nmain()\n")
    assert heavy_modules(code) == []


def test_figures_make_the_same_png_as_pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from reasonscope.report.plots import RC, Figures

    def draw(fig, ax) -> bytes:
        ax.bar(["a", "b", "c"], [0.2, 0.5, 0.7], yerr=[[0.1, 0.1, 0.1], [0.05, 0.05, 0.05]], capsize=3)
        ax.set_title("title")
        ax.set_ylabel("share (0-1)")
        fig.tight_layout()
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=100)
        return buf.getvalue()

    figures = Figures()
    ours = draw(*figures.subplots(figsize=(5.6, 4.0)))
    with matplotlib.rc_context(RC):
        fig, ax = plt.subplots(figsize=(5.6, 4.0))
        reference = draw(fig, ax)
        plt.close(fig)
    assert ours == reference
    assert figures.gcf().get_size_inches().tolist() == [5.6, 4.0]


def load_benchmark():
    spec = importlib.util.spec_from_file_location("behavior_vs_peer", ROOT / "benchmarks" / "behavior_vs_peer.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_peer_benchmark_alternates_the_sides_and_takes_the_median():
    bench = load_benchmark()
    assert bench.abba(4) == [("peer", "ours"), ("ours", "peer"), ("peer", "ours"), ("ours", "peer")]
    assert bench.abba(1) == [("peer", "ours")]
    pair = bench.pair_figures({"wall_s": 9.0, "cpu_s": 8.0}, {"wall_s": 3.0, "cpu_s": 4.0}, {"wall_s": 0.15})
    assert pair == pytest.approx({"wall_ratio": 3.0, "cpu_ratio": 2.0, "rerun_share": 0.05})
    pairs = [{"wall_ratio": r, "cpu_ratio": c, "rerun_share": s}
             for r, c, s in ((2.0, 1.0, 0.1), (3.5, 2.0, 0.05), (3.0, 1.5, 0.07), (2.5, 1.2, 0.06))]
    summary = bench.summarise(pairs)
    assert summary["wall_ratio"] == (2.75, 2.0, 3.5)  # median of 4: mean of the middle two
    assert summary["cpu_ratio"] == (1.35, 1.0, 2.0)
    assert summary["rerun_share"] == pytest.approx((0.065, 0.05, 0.1))
