"""``reasonscope attributes judge|explain|elo``: rationale attributes from the command line."""

from __future__ import annotations

from pathlib import Path

import typer

from ..attributes.settings import AttributesConfig, AutomaticAttributesConfig
from ..plan import ExperimentConfig, PlanError, parse_plan
from ..registry import all_families
from ..storage.rundir import RunDirLock
from .common import WAIT_LOCK, console, exit_when_locked, fail, print_summary, run_command_line_plan
from .options import setting_option

app = typer.Typer(name="attributes", no_args_is_help=True,
                  help="Rationale attributes: LLM judges, ROSCOE-style metrics, SHAP on human preferences, "
                  "per-attribute Elo / Bradley-Terry.")


def _attributes_settings(judge: list[str], scale: str, attribute: list[str], embedding: str | None,
                         nli: str, perplexity: str | None, margin: float, resamples: int,
                         show_reference: bool = False) -> dict:
    backend, _, nli_model = nli.partition(":")
    return {"judges": [{"spec": j} for j in judge], "scale": scale, "attributes": attribute or None,
            "automatic": {"embedding": embedding or None, "nli": {"backend": backend} | (
                {"model": nli_model} if nli_model else {}), "perplexity": perplexity},
            "margin": margin, "rating_resamples": resamples, "show_reference": show_reference}


_JUDGE = setting_option(AttributesConfig, "judges", "--judge", note="Model specs, e.g. openai/gpt-4o-mini, smollm2, "
                        "mock/judge (repeat the option).")
_SCALE = setting_option(AttributesConfig, "scale")
_ATTRIBUTE = setting_option(AttributesConfig, "attributes", "--attribute", note="Repeat the option for several.")
_EMBED = setting_option(AutomaticAttributesConfig, "embedding", note="On the command line '' = off.")
_NLI = typer.Option("none", help="NLI backend of self/source consistency: none, hf:<id-or-path>, llm:<model spec>.")
_PPL = setting_option(AutomaticAttributesConfig, "perplexity")
_MARGIN = setting_option(AttributesConfig, "margin")
_RESAMPLES = setting_option(AttributesConfig, "rating_resamples")
_SEED = setting_option(ExperimentConfig, "seed")


@app.command("judge")
@exit_when_locked()
def attributes_judge(input_path: Path | None = typer.Option(None, "--input", "-i", help="JSONL / JSON / CSV of "
                                                             "outputs to judge (as for `reasonscope score`)."),
                     run_dir: Path | None = typer.Option(None, "--run", help="Judge the generations of a run "
                                                         "directory instead (primary answers)."),
                     map_: str | None = typer.Option(None, "--map", help="field=column,... as for `score`."),
                     judge: list[str] = _JUDGE, scale: str = _SCALE, attribute: list[str] = _ATTRIBUTE,
                     embedding: str = _EMBED, nli: str = _NLI, perplexity: str | None = _PPL,
                     margin: float = _MARGIN, resamples: int = _RESAMPLES,
                     show_reference: bool = setting_option(AttributesConfig, "show_reference", "--show-reference"),
                     output_dir: str = setting_option(ExperimentConfig, "output_dir", note="With --input."),
                     name: str = setting_option(ExperimentConfig, "name", default="attributes", note="With --input."),
                     seed: int = _SEED, wait_lock: float = WAIT_LOCK) -> None:
    """Score rationales on the twelve attributes with LLM judges and ROSCOE-style metrics, then rate models."""
    from ..data.loaders import DatasetError
    from ..data.predictions import parse_mapping
    from ..plan import ScorePlan
    from ..shared_settings import StatsConfig

    if (input_path is None) == (run_dir is None):
        fail("give exactly one of --input FILE or --run RUN_DIR")
        return
    settings = _attributes_settings(judge, scale, attribute, embedding, nli, perplexity, margin, resamples,
                                    show_reference)
    try:
        if run_dir is not None:
            from ..attributes.scoring import score_attributes
            from ..report.build import write_report
            from ..storage.run_data import load_run_data
            from ..storage.store import Store

            cfg = parse_plan(settings, "<command line>", model=AttributesConfig)
            store = Store.open_existing(run_dir)
            with RunDirLock(run_dir, wait=wait_lock):
                rid = store.run()["run_id"]
                score_attributes(store, rid, cfg, StatsConfig(), load_run_data(store, rid), seed=seed,
                                 console=console)
                write_report(store, rid, run_dir, families=all_families("summary"))
            store.close()
            print_summary(run_dir / "summary.json")
            return
        from ..pipeline.score_imported import score_file

        plan = parse_plan({"experiment": {"name": name, "seed": seed, "output_dir": output_dir},
                           "input": {"path": str(input_path), "mapping": parse_mapping(map_)},
                           "families": {"attributes": settings}}, "<command line>", model=ScorePlan)
        summary = score_file(plan, console=console, wait_lock=wait_lock)
    except (PlanError, DatasetError, ValueError, FileNotFoundError, LookupError) as err:
        fail(str(err))
        return
    console.print(f"[green]judged[/green] {summary.records} records -> {summary.run_dir}/")
    print_summary(summary.run_dir / "summary.json")


@app.command("explain")
def attributes_explain(preferences: Path = setting_option(AttributesConfig, "preferences", default=...),
                       judge: list[str] = _JUDGE, scale: str = _SCALE, attribute: list[str] = _ATTRIBUTE,
                       pairwise: bool = setting_option(AttributesConfig, "pairwise"),
                       folds: int = setting_option(AttributesConfig, "folds"),
                       margin: float = _MARGIN, resamples: int = _RESAMPLES,
                       output_dir: str = setting_option(ExperimentConfig, "output_dir"),
                       name: str = setting_option(ExperimentConfig, "name", default="preferences"),
                       seed: int = _SEED, wait_lock: float = WAIT_LOCK) -> None:
    """Which attributes explain human preferences? Judge both responses, LightGBM + SHAP on the differences."""
    settings = _attributes_settings(judge, scale, attribute, "", "none", None, margin, resamples)
    settings.update(automatic=None, preferences=str(preferences), pairwise=pairwise, folds=folds)
    run_command_line_plan({"experiment": {"name": name, "seed": seed, "output_dir": output_dir},
                           "families": {"attributes": settings}}, wait_lock=wait_lock)


@app.command("elo")
@exit_when_locked()
def attributes_elo(run_dir: Path = typer.Argument(..., help="A run directory with attribute scores."),
                   margin: float = _MARGIN, resamples: int = _RESAMPLES,
                   seed: int = _SEED, wait_lock: float = WAIT_LOCK) -> None:
    """Recompute per-attribute online Elo and Bradley-Terry (bootstrap CIs, ranks) from stored scores.

    For the run's models and for the recorded battles of its preference set.
    """
    from ..attributes.scoring import rebuild_ratings
    from ..report.build import write_report
    from ..storage.store import Store

    try:
        store = Store.open_existing(run_dir)
        with RunDirLock(run_dir, wait=wait_lock):
            rid = store.run()["run_id"]
            with console.status("attributes: rating"):
                rebuild_ratings(store, rid, margin=margin, n_resamples=resamples, seed=seed)
            write_report(store, rid, run_dir, families=all_families("summary"))
    except (FileNotFoundError, LookupError, ValueError) as err:
        fail(str(err))
        return
    store.close()
    print_summary(run_dir / "summary.json")
