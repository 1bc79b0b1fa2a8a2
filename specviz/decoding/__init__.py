"""Speculative decoding itself: the pipeline of models, the engine's rounds, the γ and tree policies, the
calibration of costs, the recording of each round as plain data, and replay."""
