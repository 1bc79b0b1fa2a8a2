"""models/profiling.py: timed forwards, each taken back off the cache."""

from specviz.models import profiling
from tests.fakes import FakeLanguageModel


def test_timings_cover_every_size_and_leave_only_the_context_cached():
    model, context = FakeLanguageModel(5, salt=1), [1, 2, 3, 4]
    chain = profiling.measure_verify_costs(model, context, max_k=3, repeats=2, warmup=1)
    assert list(chain) == [1, 2, 3] and all(ms > 0 for ms in chain.values())
    assert model.tokens == context and model.forward_calls == 1 + 3 * 3  # the context, then 3 passes over k = 1..3
    assert profiling.relative_costs({1: 2.0, 2: 3.0}) == {1: 1.0, 2: 1.5}
