"""The Simulated models tab: models whose acceptance rate is set exactly, run through the real engine."""
