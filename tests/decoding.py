"""Helpers shared by tests that decode with the real offline target."""

_TARGET_GREEDY: dict[tuple, list[int]] = {}  # target_greedy's outputs, for this test process


def greedy_acceptance(config, prompts) -> float:
    """Decode each prompt speculatively, assert the output is the target's own greedy output, return α."""
    from specviz.decoding import engine
    from specviz.decoding.pipeline import build_pipeline

    pipeline = build_pipeline(config)
    accepted = drafted = 0
    for prompt in prompts:
        trace = engine.run_speculative(pipeline, prompt, config)
        assert trace.token_ids == target_greedy(pipeline, prompt, config)
        accepted += sum(r.accepted for r in trace.rounds)
        drafted += sum(r.drafted for r in trace.rounds)
    assert drafted > 0
    return accepted / drafted


def target_greedy(pipeline, prompt: str, config) -> list[int]:
    """The target's own output for `prompt` by plain decoding (no draft): the same whatever the drafter, so it is
    decoded once per test process for each target, prompt and setting it depends on."""
    from specviz.decoding import plain

    assert config.temperature == 0, "plain decoding is one output only when greedy"
    key = (config.target, prompt, config.max_new_tokens, config.chat, str(pipeline.device), str(pipeline.dtype))
    if key not in _TARGET_GREEDY:
        _TARGET_GREEDY[key] = plain.baseline_decode(pipeline, prompt, config).token_ids
    return _TARGET_GREEDY[key]
