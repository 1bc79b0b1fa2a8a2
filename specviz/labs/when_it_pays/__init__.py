"""The When it pays tab: recorded regimes where speculative decoding pays and where it does not, and why."""
