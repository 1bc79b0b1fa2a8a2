"""A token tree fed in one forward (models/tree_attention.py, LanguageModel.feed_tree / keep_path): each node's
logits are those of its own path fed as a sequence, on transformers' forward, on the lean 4-bit step and on the
static cache; keeping the accepted path leaves the cache as if only that path had been fed."""

import pytest
import torch

from specviz.models import int4, int4_decoder
from specviz.models.language_model import TransformersModel
from specviz.models.static_cache import StaticCacheModel
from specviz.models.tree_attention import ancestors, depths, is_chain
from tests.builders import VOCAB, tiny_model

PREFIX = torch.arange(3, 11)  # 8 committed tokens
# a(0) b(1) c(2) follow the prefix; d(3) follows a; e(4) follows b; f(5) follows d; g(6) follows f
TOKENS = torch.tensor([20, 21, 22, 30, 31, 40, 50])
PARENTS = [-1, -1, -1, 0, 1, 3, 5]


def path_of(node: int) -> list[int]:
    path = []
    while node >= 0:
        path.append(node)
        node = PARENTS[node]
    return path[::-1]


def sequential_logits(model: TransformersModel, path: list[int]) -> torch.Tensor:
    """Logits [V] after the prefix and `path`'s tokens, fed as a plain sequence into a fresh cache."""
    model.reset()
    return model.feed(torch.cat([PREFIX, TOKENS[path]]))[0]


def models():
    """(label, factory) of the forwards a tree must run on: transformers' (Llama, Qwen2), the lean 4-bit step, and
    the static cache (eager on the CPU)."""
    def lean(architecture):
        dynamic = tiny_model(architecture, 1, "cpu", torch.float32)
        return TransformersModel(int4_decoder.Int4Decoder(dynamic.hf_model), VOCAB, dynamic.device, "lean")

    def static(architecture, device="cpu"):
        dynamic = tiny_model(architecture, 2, device, torch.float32)
        return StaticCacheModel(dynamic.hf_model, VOCAB, dynamic.device, "static", 64)

    factories = [("llama", lambda: tiny_model("llama", 0, "cpu", torch.float32)),
                 ("qwen2", lambda: tiny_model("qwen2", 0, "cpu", torch.float32)),
                 ("static-qwen2", lambda: static("qwen2"))]
    if torch.cuda.is_available():  # a GPU machine (docs/gpu.md): the tree mask through CUDA's attention kernels
        factories += [("cuda-llama", lambda: tiny_model("llama", 0, "cuda", torch.float32)),
                      ("cuda-static-qwen2", lambda: static("qwen2", "cuda"))]
    if int4.available(torch.device("cpu")):
        factories.append(("lean-qwen2", lambda: lean("qwen2")))
    return factories


@pytest.mark.parametrize("label, factory", models(), ids=[label for label, _ in models()])
def test_every_node_sees_its_own_path_and_the_kept_path_is_a_plain_sequence(label, factory):
    model = factory()
    # the lean step's dense prompt path rounds differently; CUDA's float32 matmuls may use TF32
    tolerance = 2e-3 if label.startswith(("lean", "cuda")) else 1e-4
    expected = [sequential_logits(model, path_of(node)) for node in range(len(TOKENS))]
    model.reset()
    model.feed(PREFIX)
    tree_logits = model.feed_tree(TOKENS, PARENTS)  # [n, V], one forward
    for node in range(len(TOKENS)):
        assert torch.allclose(tree_logits[node], expected[node], atol=tolerance), (label, node)
    model.keep_path([1, 4])  # b, e: not the first entries, so they move down
    assert model.cached_length == len(PREFIX) + 2 and model.tree_parents == []
    after = model.feed(torch.tensor([60]))[0]
    model.reset()
    reference = model.feed(torch.cat([PREFIX, TOKENS[[1, 4]], torch.tensor([60])]))[0]
    assert torch.allclose(after, reference, atol=tolerance)


@pytest.mark.parametrize("label, factory", models()[:2], ids=["llama", "qwen2"])
def test_a_tree_fed_one_depth_at_a_time_equals_one_fed_at_once(label, factory):
    """A draft model expands its tree a frontier at a time: earlier entries stay in the cache as the tree."""
    model = factory()
    model.reset()
    model.feed(PREFIX)
    whole = model.feed_tree(TOKENS, PARENTS)
    model.reset()
    model.feed(PREFIX)
    parts = [model.feed_tree(TOKENS[:3], PARENTS[:3]), model.feed_tree(TOKENS[3:5], PARENTS[3:5]),
             model.feed_tree(TOKENS[5:6], PARENTS[5:6]), model.feed_tree(TOKENS[6:], PARENTS[6:])]
    assert torch.allclose(torch.cat(parts), whole, atol=1e-4)
    model.keep_path([0, 3, 5, 6])  # a d f g: the deepest path
    assert model.feed(torch.tensor([60]))[0].shape == (VOCAB,)


def test_a_chain_is_fed_without_a_mask_and_kept_in_place():
    model = tiny_model("llama", 0, "cpu", torch.float32)
    model.reset()
    model.feed(PREFIX)
    chain = model.feed_tree(TOKENS[:3], [-1, 0, 1])
    model.reset()
    model.feed(PREFIX)
    assert torch.equal(chain, model.feed(TOKENS[:3], logits_to_keep=3))  # bit for bit: the same forward
    model.reset()
    model.feed(PREFIX)
    model.feed_tree(TOKENS[:3], [-1, 0, 1])
    model.keep_path([0, 1])
    assert model.cached_length == len(PREFIX) + 2


def test_misuse_is_refused_in_words():
    model = tiny_model("llama", 0, "cpu", torch.float32)
    model.reset()
    model.feed(PREFIX)
    model.feed_tree(TOKENS[:3], PARENTS[:3])
    with pytest.raises(ValueError, match="keep a path"):
        model.feed(torch.tensor([5]))
    with pytest.raises(ValueError, match="not a path"):
        model.keep_path([0, 1])  # siblings
    with pytest.raises(ValueError, match="an earlier node"):
        model.feed_tree(torch.tensor([5]), [7])
    with pytest.raises(ValueError, match="crop into a token tree"):
        model.crop(len(PREFIX) + 1)
    model.crop(len(PREFIX))  # back to the committed tokens drops the tree
    assert model.tree_parents == [] and model.cached_length == len(PREFIX)


def test_tree_bookkeeping():
    assert depths(PARENTS) == [1, 1, 1, 2, 2, 3, 4]
    assert is_chain([-1, 0, 1]) and not is_chain(PARENTS)
    seen = ancestors(PARENTS)
    assert seen[6].nonzero().flatten().tolist() == [0, 3, 5, 6]
