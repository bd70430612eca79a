"""``reasonscope attributes judge|explain|elo``: rationale attributes from the command line."""

from __future__ import annotations

from pathlib import Path

import typer

from ..config import PlanError, parse_plan
from ..rundir import RunDirLock, RunDirLocked
from .common import WAIT_LOCK, console, fail, locked, print_summary, run_command_line_plan

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


_JUDGE = typer.Option([], "--judge", help="Judge model spec(s), e.g. openai/gpt-4o-mini, smollm2, mock/judge.")
_SCALE = typer.Option("0-1", help="Scale the judges answer on: 0-1 or 0-10 (normalised to 0-1).")
_ATTRIBUTE = typer.Option([], "--attribute", help="Judge only these attributes (default: all twelve).")
_EMBED = typer.Option("embedded-minilm", help="Embedding model of the ROSCOE metrics ('' = off).")
_NLI = typer.Option("none", help="NLI backend of self/source consistency: none, hf:<id-or-path>, llm:<model spec>.")
_PPL = typer.Option(None, help="Causal LM for perplexity (smollm2, hf/<path>); off by default.")
_MARGIN = typer.Option(0.0, min=0, max=1, help="Attribute battles tie when the scores differ by at most this "
                       "(+1e-9); 0 = only equal scores tie, as in the publication.")
_RESAMPLES = typer.Option(100, min=10, help="Bootstrap rounds of Bradley-Terry.")


@app.command("judge")
def attributes_judge(input_path: Path | None = typer.Option(None, "--input", "-i", help="JSONL / JSON / CSV of "
                                                             "outputs to judge (as for `reasonscope score`)."),
                     run_dir: Path | None = typer.Option(None, "--run", help="Judge the generations of a run "
                                                         "directory instead (primary answers)."),
                     map_: str | None = typer.Option(None, "--map", help="field=column,... as for `score`."),
                     judge: list[str] = _JUDGE, scale: str = _SCALE, attribute: list[str] = _ATTRIBUTE,
                     embedding: str = _EMBED, nli: str = _NLI, perplexity: str | None = _PPL,
                     margin: float = _MARGIN, resamples: int = _RESAMPLES,
                     show_reference: bool = typer.Option(False, "--show-reference", help="Show the gold answer "
                                                         "to the judges (off by default, as in the publication)."),
                     output_dir: str = typer.Option("runs", help="Parent folder of the run directory (--input)."),
                     name: str = typer.Option("attributes", help="Run name (--input)."),
                     seed: int = typer.Option(0), wait_lock: float = WAIT_LOCK) -> None:
    """Score rationales on the twelve attributes with LLM judges and ROSCOE-style metrics, then rate models."""
    from ..attributes.settings import AttributesConfig
    from ..config import ScorePlan
    from ..data.loaders import DatasetError
    from ..data.predictions import parse_mapping
    from ..settings import StatsConfig

    if (input_path is None) == (run_dir is None):
        fail("give exactly one of --input FILE or --run RUN_DIR")
        return
    settings = _attributes_settings(judge, scale, attribute, embedding, nli, perplexity, margin, resamples,
                                    show_reference)
    try:
        if run_dir is not None:
            from ..attributes.scoring import score_attributes
            from ..report.build import write_report
            from ..results import load_run_data
            from ..store import Store

            cfg = parse_plan(settings, "<command line>", model=AttributesConfig)
            store = Store.open_existing(run_dir)
            with RunDirLock(run_dir, wait=wait_lock):
                rid = store.run()["run_id"]
                score_attributes(store, rid, cfg, StatsConfig(), load_run_data(store, rid), seed=seed,
                                 console=console)
                write_report(store, rid, run_dir)
            store.close()
            print_summary(run_dir / "summary.json")
            return
        from ..importer import score_file

        plan = parse_plan({"experiment": {"name": name, "seed": seed, "output_dir": output_dir},
                           "input": {"path": str(input_path), "mapping": parse_mapping(map_)},
                           "families": {"attributes": settings}}, "<command line>", model=ScorePlan)
        summary = score_file(plan, console=console, wait_lock=wait_lock)
    except RunDirLocked as err:
        locked(err)
        return
    except (PlanError, DatasetError, ValueError, FileNotFoundError, LookupError) as err:
        fail(str(err))
        return
    console.print(f"[green]judged[/green] {summary.records} records -> {summary.run_dir}/")
    print_summary(summary.run_dir / "summary.json")


@app.command("explain")
def attributes_explain(preferences: Path = typer.Option(..., help="Human preferences: MT-Bench human judgments, "
                                                        "Chatbot Arena battles, or JSONL question/response_a/"
                                                        "response_b/model_a/model_b/winner."),
                       judge: list[str] = _JUDGE, scale: str = _SCALE, attribute: list[str] = _ATTRIBUTE,
                       pairwise: bool = typer.Option(True, help="Also judge each pair in both orders."),
                       folds: int = typer.Option(5, min=2, help="Cross-validation folds."),
                       margin: float = _MARGIN, resamples: int = _RESAMPLES,
                       output_dir: str = typer.Option("runs", help="Parent folder of the run directory."),
                       name: str = typer.Option("preferences", help="Run name."),
                       seed: int = typer.Option(0), wait_lock: float = WAIT_LOCK) -> None:
    """Which attributes explain human preferences? Judge both responses, LightGBM + SHAP on the differences."""
    settings = _attributes_settings(judge, scale, attribute, "", "none", None, margin, resamples)
    settings.update(automatic=None, preferences=str(preferences), pairwise=pairwise, folds=folds)
    run_command_line_plan({"experiment": {"name": name, "seed": seed, "output_dir": output_dir},
                           "families": {"attributes": settings}}, wait_lock=wait_lock)


@app.command("elo")
def attributes_elo(run_dir: Path = typer.Argument(..., help="A run directory with attribute scores."),
                   margin: float = _MARGIN, resamples: int = _RESAMPLES,
                   seed: int = typer.Option(0), wait_lock: float = WAIT_LOCK) -> None:
    """Recompute per-attribute online Elo and Bradley-Terry (bootstrap CIs, ranks) from stored scores.

    For the run's models and for the recorded battles of its preference set.
    """
    from ..attributes.scoring import rebuild_ratings
    from ..report.build import write_report
    from ..store import Store

    try:
        store = Store.open_existing(run_dir)
        with RunDirLock(run_dir, wait=wait_lock):
            rid = store.run()["run_id"]
            with console.status("attributes: rating"):
                rebuild_ratings(store, rid, margin=margin, n_resamples=resamples, seed=seed)
            write_report(store, rid, run_dir)
    except RunDirLocked as err:
        locked(err)
        return
    except (FileNotFoundError, LookupError, ValueError) as err:
        fail(str(err))
        return
    store.close()
    print_summary(run_dir / "summary.json")
