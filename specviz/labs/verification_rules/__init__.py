"""The Verification rules tab: the acceptance rules side by side, on a live run's recorded p and q, and the
cross-vocabulary case."""
