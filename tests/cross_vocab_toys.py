"""The cross-vocabulary toys: a greedy longest-match tokenizer over a list of pieces, the target's and the draft's
pieces (three shared, the rest each side's own), and a pipeline of scripted models drafting across the two."""

import torch

from specviz.decoding.pipeline import Pipeline
from specviz.drafters.cross_vocab import CrossVocabDrafter
from specviz.drafters.vocab_bridge import VocabBridge
from specviz.models.cache import WeightsCache
from tests.fakes import FakeLanguageModel

TARGET_PIECES = ["a", "b", "c", "ab", "ca"]  # shared with the draft: a, b, c; the target's own: ab, ca
DRAFT_PIECES = ["b", "c", "a", "bc", "abc", "ba"]  # the draft's own: bc, abc, ba
PROMPT = "ab"


class ToyTokenizer:
    """Greedy longest-match tokenization over a list of pieces (written as byte-level BPE writes ASCII)."""

    chat_template = None
    eos_token_id = None
    all_special_tokens: list[str] = []
    added_tokens_encoder: dict[str, int] = {}

    def __init__(self, pieces: list[str]):
        self.pieces = pieces

    def __len__(self) -> int:
        return len(self.pieces)

    def __call__(self, text, add_special_tokens=True):
        ids = []
        while text:
            piece = max((p for p in self.pieces if text.startswith(p)), key=len)
            ids.append(self.pieces.index(piece))
            text = text[len(piece):]
        return {"input_ids": ids}

    def decode(self, ids, skip_special_tokens=False):
        return "".join(self.pieces[i] for i in ids)

    def convert_ids_to_tokens(self, ids):
        return [self.pieces[i] for i in ids]


def cross_vocab_pipeline(drafter_class=CrossVocabDrafter, confidence=0.0) -> Pipeline:
    """Scripted target and draft models over TARGET_PIECES and DRAFT_PIECES, the draft's tokens bridged to the target's."""
    target_tokenizer, draft_tokenizer = ToyTokenizer(TARGET_PIECES), ToyTokenizer(DRAFT_PIECES)
    target = FakeLanguageModel(len(TARGET_PIECES), salt=1, name="target")
    draft = FakeLanguageModel(len(DRAFT_PIECES), salt=7, sharpness=1.0, name="draft")
    bridge = VocabBridge.between(draft_tokenizer, target_tokenizer, len(DRAFT_PIECES), len(TARGET_PIECES))
    drafter = drafter_class(draft, bridge, target_tokenizer, draft_tokenizer, confidence)
    return Pipeline(target, drafter, target_tokenizer, [], torch.device("cpu"), torch.float32, draft, cache=WeightsCache())
