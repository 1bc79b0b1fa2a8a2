"""How likely the target finds a sampled text: its mean negative log-likelihood per token at the run's temperature.

A lossless method samples from the target's own distribution, so over many prompts its texts score like plain
sampling's (their means agree within noise). A method that leaves the target's distribution shows up as a higher
mean: its text is less likely under the target (at T = 1, garbled text scores several nats a token worse).
"""

from __future__ import annotations

import torch

from specviz.models import loading as models


def target_nll(loaded: models.LoadedModel, prompt_ids: list[int], token_ids: list[int], temperature: float,
               language_model=None) -> float:
    """Mean over the generated tokens of −log p_T(token | everything before it), p_T the target's softmax at
    `temperature`, in one teacher-forced forward (outside any timing). A backend without transformers' model
    (llama.cpp's LoadedGGUF) runs it through `language_model`, or a new one of `loaded`'s."""
    if not token_ids or temperature <= 0:
        raise ValueError("the target's likelihood of a text needs generated tokens and a temperature above 0")
    ids = torch.tensor([list(prompt_ids) + list(token_ids)], dtype=torch.long, device=loaded.device)  # [1, P + n]
    with torch.inference_mode():
        if hasattr(loaded, "hf_model"):  # transformers: the model's own forward
            logits = loaded.hf_model(ids, logits_to_keep=len(token_ids) + 1).logits[0, :-1].float()  # [n, V']: row i → token i
        else:  # another backend (llama.cpp): one forward of its language model, through the LanguageModel protocol
            model = language_model or loaded.language_model(len(loaded.tokenizer))
            model.reset()
            logits = model.feed(ids[0], logits_to_keep=len(token_ids) + 1)[:-1].float()  # [n, V]
            model.reset()
    logits = logits[:, : len(loaded.tokenizer)] / temperature  # the padded rows are no tokens
    log_probs = torch.log_softmax(logits, dim=-1)  # [n, V]
    chosen = torch.tensor(token_ids, device=log_probs.device)
    return float(-log_probs[torch.arange(len(token_ids)), chosen].mean())
