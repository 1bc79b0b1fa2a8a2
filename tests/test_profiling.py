"""models/profiling.py: timed forwards of a chain and of a token tree, each taken back off the cache."""

from specviz.models import profiling
from tests.fakes import FakeLanguageModel


def test_chain_and_tree_timings_cover_every_size_and_leave_only_the_context_cached():
    model, context = FakeLanguageModel(5, salt=1), [1, 2, 3, 4]
    chain = profiling.measure_verify_costs(model, context, max_k=3, repeats=2, warmup=1)
    assert list(chain) == [1, 2, 3] and all(ms > 0 for ms in chain.values())
    assert model.tokens == context and model.forward_calls == 1 + 3 * 3  # the context, then 3 passes over k = 1..3
    tree = profiling.measure_tree_verify_costs(model, context, [2, 6], repeats=2, warmup=1)
    assert list(tree) == [2, 6] and all(ms > 0 for ms in tree.values())
    assert model.tokens == context and model.tree_tokens == [] and model.tree_parents == []
    assert profiling.heap_parents(6) == [-1, -1, 0, 0, 1, 1]
    assert profiling.relative_costs({1: 2.0, 2: 3.0}) == {1: 1.0, 2: 1.5}
