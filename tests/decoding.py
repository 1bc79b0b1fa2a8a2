"""Helpers shared by tests that decode with the real offline target."""


def greedy_acceptance(config, prompts) -> float:
    """Decode each prompt speculatively, assert the output is the target's own greedy output, return α."""
    from specviz.decoding import engine
    from specviz.decoding.pipeline import build_pipeline

    pipeline = build_pipeline(config)
    accepted = drafted = 0
    for prompt in prompts:
        trace = engine.run_speculative(pipeline, prompt, config)
        assert trace.token_ids == engine.baseline_decode(pipeline, prompt, config).token_ids
        accepted += sum(r.accepted for r in trace.rounds)
        drafted += sum(r.drafted for r in trace.rounds)
    assert drafted > 0
    return accepted / drafted
