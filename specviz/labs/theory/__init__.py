"""The Theory tab: the speedup calculator, the execution trace, the oracle γ and token trees."""
