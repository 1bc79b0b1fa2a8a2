"""One contract for every model backend (models/protocol.py): the tests' fakes, the labs' simulated models,
transformers and llama.cpp. Each must give a prefix's logits whatever way the prefix was fed (at once, a token at a
time, as a chain given as a tree), and forget what a crop or a reset removed."""

import pytest
import torch

from specviz.models.protocol import LanguageModel
from tests.fakes import FakeLanguageModel

PROMPT = [5, 9, 2, 7, 7, 3, 11, 4]


def fake():
    return FakeLanguageModel(16, salt=3), 0.0


def simulated():
    from specviz.labs.simulated_models.models import SimulatedModel, SimulatedWorld

    return SimulatedModel(SimulatedWorld(16, 0, 2.0), 1.0), 0.0


def transformers_tiny():
    from transformers import LlamaConfig, LlamaForCausalLM

    from specviz.models.language_model import TransformersModel

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1)
    return TransformersModel(LlamaForCausalLM(config).eval(), 32, torch.device("cpu"), "tiny"), 1e-4


def llama_cpp_offline():
    """The embedded SmolLM2-135M GGUF on llama.cpp, a context made for token trees: a batched forward and one-token
    forwards round differently, so rows agree to a tolerance (their argmaxes are checked exactly in
    test_llama_cpp.py)."""
    from specviz.config import LLAMA_CPP, OFFLINE_MODEL
    from specviz.models import llama_cpp, loading, offline

    if not llama_cpp.available() or offline.installed_gguf() is None:
        pytest.skip(f"needs the llama.cpp bindings ({llama_cpp.INSTALL_COMMAND}) and {offline.INSTALL_COMMAND}")
    loaded = loading.load_model(OFFLINE_MODEL, backend=LLAMA_CPP)
    return loaded.language_model(loaded.logits_width, trees=True), 0.05


BACKENDS = [fake, simulated, transformers_tiny, pytest.param(llama_cpp_offline, marks=pytest.mark.slow)]


@pytest.fixture(params=BACKENDS, ids=["fake", "simulated", "transformers", "llama.cpp"])
def backend(request):
    return request.param()


def test_every_backend_satisfies_the_protocol(backend):
    model, _ = backend
    assert isinstance(model, LanguageModel)
    assert model.vocab_size > 0 and model.max_length > len(PROMPT) and model.device.type == "cpu"


def test_a_prefix_fed_at_once_or_token_by_token_gives_the_same_logits(backend):
    model, tolerance = backend
    model.reset()
    at_once = model.feed(torch.tensor(PROMPT), logits_to_keep=3)  # [3, V]
    assert at_once.shape == (3, model.vocab_size) and at_once.dtype == torch.float32
    assert model.cached_length == len(PROMPT)
    model.reset()
    assert model.cached_length == 0
    model.feed(torch.tensor(PROMPT[:-3]))
    one_by_one = torch.cat([model.feed(torch.tensor([token])) for token in PROMPT[-3:]])
    torch.testing.assert_close(one_by_one, at_once, atol=tolerance, rtol=tolerance)


def test_a_crop_forgets_what_it_removed(backend):
    model, tolerance = backend
    model.reset()
    expected = model.feed(torch.tensor(PROMPT))  # [1, V] after the whole prompt
    calls, fed = model.forward_calls, model.tokens_fed
    model.feed(torch.tensor([1, 2, 3]))  # a draft that is then rejected
    model.crop(len(PROMPT) - 1)
    assert model.cached_length == len(PROMPT) - 1
    again = model.feed(torch.tensor(PROMPT[-1:]))
    torch.testing.assert_close(again, expected, atol=tolerance, rtol=tolerance)
    assert (model.forward_calls, model.tokens_fed) == (calls + 2, fed + 4)


def test_a_chain_fed_as_a_tree_keeps_the_accepted_path(backend):
    model, tolerance = backend
    model.reset()
    model.feed(torch.tensor(PROMPT[:4]))
    rows = model.feed_tree(torch.tensor(PROMPT[4:7]), [-1, 0, 1])  # [3, V]: one row per entry
    assert rows.shape == (3, model.vocab_size)
    model.keep_path([0, 1])  # the third entry rejected
    assert model.cached_length == 6 and model.tree_parents == []
    after = model.feed(torch.tensor(PROMPT[6:7]))
    torch.testing.assert_close(after, rows[2:3], atol=tolerance, rtol=tolerance)


# A tree grown in two feeds (as drafters/tree.py grows one): entries 0, 1 are children of the committed text;
# 2, 3 children of 0; 4 a child of 1. Each entry's path, as entry indices from the root.
TREE_FEEDS = [([3, 8], [-1, -1]), ([6, 1, 9], [0, 0, 1])]
TREE_PATHS = {0: [0], 1: [1], 2: [0, 2], 3: [0, 3], 4: [1, 4]}


@pytest.mark.parametrize("kept", [[0, 3], [1, 4], []])
def test_a_branching_tree_gives_each_entry_its_own_paths_logits(backend, kept):
    model, tolerance = backend
    tokens = [token for feed, _ in TREE_FEEDS for token in feed]
    try:
        model.reset()
        model.feed(torch.tensor(PROMPT[:4]))
        rows = torch.cat([model.feed_tree(torch.tensor(feed), parents) for feed, parents in TREE_FEEDS])  # [5, V]
    except ValueError as refusal:
        pytest.skip(f"this backend reads chains only: {refusal}")
    assert model.cached_length == 4 + len(tokens) and model.tree_parents == [-1, -1, 0, 0, 1]
    model.keep_path(kept)
    assert model.cached_length == 4 + len(kept) and model.tree_parents == []
    after_kept = model.feed(torch.tensor([2]))
    for entry, path in TREE_PATHS.items():  # each entry's logits are its path's, fed as a chain
        model.reset()
        chain = model.feed(torch.tensor(PROMPT[:4] + [tokens[node] for node in path]))
        torch.testing.assert_close(rows[entry : entry + 1], chain, atol=tolerance, rtol=tolerance)
    model.reset()
    chain = model.feed(torch.tensor(PROMPT[:4] + [tokens[node] for node in kept] + [2]))
    torch.testing.assert_close(after_kept, chain, atol=tolerance, rtol=tolerance)  # the other paths left the cache


def test_a_tree_longer_than_one_batch_is_read_in_pieces(backend):
    """The first round reads the prompt with the tree (the engine's pending tokens): more entries than llama.cpp's
    batch of 512; each entry's logits are still its path's."""
    model, tolerance = backend
    if model.max_length < 700:
        pytest.skip("a context too short for 700 entries")
    chain = [(index * 7) % model.vocab_size for index in range(600)]
    parents = [*range(-1, 599), 598]  # a chain of 600, then a sibling of its last entry
    try:
        model.reset()
        rows = model.feed_tree(torch.tensor(chain + [3]), parents, logits_to_keep=2)
    except ValueError as refusal:
        pytest.skip(f"this backend reads chains only: {refusal}")
    model.keep_path(list(range(599)) + [600])
    model.reset()
    expected = model.feed(torch.tensor(chain[:599] + [3]))
    torch.testing.assert_close(rows[1:2], expected, atol=tolerance, rtol=tolerance)
