"""Statistics: intervals, paired tests, multiple comparisons, Elo and Bradley-Terry, agreement.

Intervals of means and paired differences (exact for shares), paired tests, multiple-comparison
adjustment, Elo and Bradley-Terry ratings, agreement between raters. Public names are re-exported here,
imported on first use.
"""

from .._lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "Estimate": "bootstrap",
    "bootstrap_mean": "bootstrap",
    "estimate": "bootstrap",
    "PairedDifference": "bootstrap",
    "paired_difference": "bootstrap",
    "clopper_pearson": "intervals",
    "bounded_mean": "intervals",
    "newcombe_paired": "intervals",
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
