"""Bootstrap CIs, paired tests, multiple-comparison adjustment, Elo and Bradley-Terry, agreement. Public names are re-exported here, imported on first use."""

from .._lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "Estimate": "bootstrap",
    "bootstrap_mean": "bootstrap",
    "estimate": "bootstrap",
    "PairedDifference": "bootstrap",
    "paired_difference": "bootstrap",
    "Significance": "permutation",
    "sign_flip_test": "permutation",
    "asymmetry_permutation_test": "permutation",
    "holm": "multiple",
    "adjust": "multiple",
    "online_elo": "ratings",
    "fit_bradley_terry": "ratings",
    "bradley_terry": "ratings",
    "bootstrap_ratings": "ratings",
    "rate_battles": "ratings",
    "krippendorff_alpha": "agreement",
    "mean_spearman": "agreement",
})
