"""The training-time test (HASS / EAGLE-3) that train.py optimises and agreement.py reports: the draft unrolled
over K drafting steps in one forward, its attention mask, its loss per block, and held-out agreement.

Block 1 reads the target's true states h_j; block k reads the states block k-1 predicted, and attends to true
pairs only up to where drafting would have started, so training sees exactly what drafting step k sees.
Loss per block: KL(p̃ ‖ q) + λ·SmoothL1(ĥ_{j+1}, h_{j+1}), p̃ = softmax(W_S h_{j+1}), q = softmax(W_S ĥ_{j+1}).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def pair_batch(sequences, max_length, generated_only=False):
    """Right-padded pairs: features h_j [B, n, H], next ids x_{j+1} [B, n], targets h_{j+1} [B, n, H],
    valid [B, n] and current ids x_j [B, n]. generated_only keeps only pairs j ≥ P - 1 (P prompt tokens), whose
    predictions are generated tokens, the ones a drafter proposes; the prompt's pairs are still read (attended to),
    just not scored."""
    lengths = [min(len(s.token_ids), max_length) - 1 for s in sequences]
    n, hidden = max(lengths), sequences[0].features.shape[-1]
    features = torch.zeros(len(sequences), n, hidden)
    targets = torch.zeros(len(sequences), n, hidden)
    next_ids = torch.zeros(len(sequences), n, dtype=torch.long)
    current_ids = torch.zeros(len(sequences), n, dtype=torch.long)
    valid = torch.zeros(len(sequences), n, dtype=torch.bool)
    for row, (s, length) in enumerate(zip(sequences, lengths)):
        f = s.features[: length + 1].float()
        features[row, :length], targets[row, :length] = f[:-1], f[1:]
        next_ids[row, :length] = torch.tensor(s.token_ids[1: length + 1])
        current_ids[row, :length] = torch.tensor(s.token_ids[:length])
        valid[row, max(0, s.prompt_length - 1) if generated_only else 0: length] = True
    return features, next_ids, targets, valid, current_ids


def unrolled_mask(n: int, blocks: int) -> torch.Tensor:
    """[1, 1, K·n, K·n] bool for K stacked blocks of n pairs (training-time test).

    Block k at position m stands for drafting step k at pair m: drafting began after the true pair m-k+1, so it
    attends block 1 (true states) at positions ≤ m-k+1, and block b (2 ≤ b ≤ k) only at position m-(k-b).
    """
    m = torch.arange(n)
    mask = torch.zeros(blocks * n, blocks * n, dtype=torch.bool)
    for k in range(1, blocks + 1):
        rows = slice((k - 1) * n, k * n)
        mask[rows, :n] = m.view(1, -1) <= (m.view(-1, 1) - k + 1)
        for b in range(2, k + 1):
            mask[rows, (b - 1) * n: b * n] = m.view(1, -1) == (m.view(-1, 1) - (k - b))
    return mask.view(1, 1, blocks * n, blocks * n)


def block_losses(draft, sequences, args, feature_rms, generator) -> list[torch.Tensor]:
    device = draft.fc.weight.device
    batch = pair_batch(sequences, args.max_length, generated_only=args.score == "generated")
    features, next_ids, targets, valid, current_ids = (t.to(device) for t in batch)
    n = features.shape[1]
    noise = (torch.rand(features.shape, generator=generator) - 0.5).to(device) * (2 * args.noise * feature_rms)
    inputs = [features + noise]  # block 1: the true states
    if args.without_states:
        inputs = [torch.zeros_like(features)]
    positions = torch.arange(n, device=device).view(1, -1).expand(features.shape[0], -1)
    predicted = None
    for k in range(1, args.unroll + 1):  # blocks k < K only supply the inputs of block k + 1: no gradient
        grad = k == args.unroll
        with torch.set_grad_enabled(grad):
            blocks = torch.cat(inputs, dim=1)
            ids, pos, current = next_ids.repeat(1, k), positions.repeat(1, k), current_ids.repeat(1, k)
            predicted = draft(blocks, ids, pos, attention_mask=unrolled_mask(n, k).to(device),
                              current_ids=current)  # [B, k·n, H]
        if not grad:
            last = predicted[:, (k - 1) * n:].detach()  # block k's predictions of h_{m+1}, read at pair m + 1
            inputs.append(torch.cat([features[:, :1], last[:, :-1]], dim=1))
    with torch.no_grad():
        teacher = F.softmax(draft.head_logits(targets), dim=-1)  # [B, n, S], p renormalised over S
    losses = []
    for k in range(args.unroll):
        block = predicted[:, k * n: (k + 1) * n]
        usable = valid.clone()
        usable[:, :k] = False  # block k+1 at the first k positions has no drafting context
        log_q = F.log_softmax(draft.head_logits(block), dim=-1)
        kl = (teacher * (torch.log(teacher.clamp_min(1e-12)) - log_q)).sum(-1)
        regression = F.smooth_l1_loss(block, targets, reduction="none").mean(-1)
        losses.append(((kl + args.regression * regression) * usable).sum() / usable.sum().clamp_min(1))
    return losses


@torch.no_grad()
def evaluate(draft, hf_model, sequences, args) -> dict:
    """Held-out agreement at generated tokens: is the draft's top token the target's top token (full vocabulary)?

    step1: reading true states (the first drafted token); step2: reading its own prediction (the second).
    """
    if not sequences:
        return {}
    head, device = hf_model.get_output_embeddings(), draft.fc.weight.device
    agree = [0, 0]
    counted = [0, 0]
    for start in range(0, len(sequences), args.batch):
        batch = pair_batch(sequences[start: start + args.batch], args.max_length, generated_only=True)
        features, next_ids, targets, valid, current_ids = (t.to(device) for t in batch)
        n = features.shape[1]
        positions = torch.arange(n, device=device).view(1, -1).expand(features.shape[0], -1)
        target_top = head(targets.to(head.weight.dtype)).argmax(-1)  # [B, n] over the full vocabulary
        inputs = [torch.zeros_like(features) if args.without_states else features]
        for k in (1, 2):
            predicted = draft(torch.cat(inputs, 1), next_ids.repeat(1, k), positions.repeat(1, k),
                              attention_mask=unrolled_mask(n, k).to(device), current_ids=current_ids.repeat(1, k))
            predicted = predicted[:, (k - 1) * n:]
            draft_top = draft.head_ids[draft.head_logits(predicted).argmax(-1)]
            usable = valid.clone()
            usable[:, : k - 1] = False
            agree[k - 1] += int(((draft_top == target_top) & usable).sum())
            counted[k - 1] += int(usable.sum())
            inputs.append(torch.cat([inputs[0][:, :1], predicted[:, :-1]], dim=1))
    result = {f"valid_top1_step{k + 1}": round(agree[k] / max(1, counted[k]), 4) for k in range(2)}
    print(f"held-out top-1 agreement with the target: {result}")
    return result
