"""The course's (seed 002's) "Apply" exercises and Lesson 2's worked example, answered by specviz's own code.

Each answer is a pure function that computes the figures with the same functions the app runs (specviz.core.theory,
specviz.core.sampling, specviz.core.verify, the Sampling and Bandwidth labs) and returns them with the steps as markdown.
The course prints no answers to its exercises; where its own worked text has a figure that does not follow from its
inputs (Lesson 2's T = 0.5 example), the answer shows the course's figure, the correct one, and the arithmetic.

>>> answer = lesson_3_exercise()
>>> round(answer["bound"], 12), round(answer["acceptance"], 4), answer["bottleneck"]
(3.0, 0.3333, 'A')
>>> lesson_5_exercise()["accepted_count"], lesson_5_exercise()["next_kind"]
(2, 'bonus')
"""

from __future__ import annotations

import math

import torch

from specviz.core import theory
from specviz.core.sampling import Standardizer
from specviz.core.verify import verify
from specviz.labs.course_exercises import worked as course_worked
from specviz.labs.course_exercises.presets import LESSON_3_APPLY, LESSON_4_APPLY
from specviz.labs.memory_bandwidth import bandwidth
from specviz.labs.sampling_lab import rejection

# Lesson 2's worked example: the raw p, and the T = 0.5 result the course prints (it rounds the exponentials to three
# decimals before normalising, which moves the third and fifth entries).
LESSON_2_PROBS = [0.4, 0.3, 0.15, 0.1, 0.05]
LESSON_2_COURSE_T_HALF = [0.561, 0.316, 0.077, 0.035, 0.011]
LESSON_2_COURSE_TOP_2 = [0.571, 0.429, 0.0, 0.0, 0.0]


def _vector(values, digits: int = 3) -> str:
    return "[" + ", ".join(f"{value:.{digits}f}" for value in values) + "]"


def standardized(probs, temperature: float = 1.0, top_k: int = 0) -> list[float]:
    """The distribution a sampler draws from after specviz's Standardizer (transformers' warpers) reshapes log p.

    Temperature 0 is argmax (one-hot). [.4, .3, .15, .1, .05] at T = 0.5 -> p² / Σ p² = [.561, .316, .079, .035, .009].
    """
    logits = torch.tensor(probs, dtype=torch.float64).log().unsqueeze(0)  # [1, V]: log p are logits of p
    return Standardizer(temperature=temperature, top_k=top_k)(logits.double())[0].tolist()


def lesson_1_exercise(params: float = 70e9, bytes_per_param: float = 2, bandwidth_bytes_per_s: float = 2e12,
                      tokens: int = 100) -> dict:
    """70B parameters in 16 bits read at 2 TB/s: 140 GB per read, 70 ms; 100 tokens need 100 reads, 7 s at least."""
    read = bandwidth.weight_read_seconds(params, bytes_per_param, bandwidth_bytes_per_s)
    total = bandwidth.min_walltime_seconds(tokens, params, bytes_per_param, bandwidth_bytes_per_s)
    gigabytes = params * bytes_per_param / 1e9
    markdown = (f"1. The weights are {params / 1e9:g}e9 parameters × {bytes_per_param:g} bytes = **{gigabytes:g} GB**.\n"
                f"2. One read at {bandwidth_bytes_per_s / 1e12:g} TB/s takes {gigabytes:g} GB ÷ "
                f"{bandwidth_bytes_per_s / 1e9:g} GB/s = **{read * 1e3:g} ms**.\n"
                f"3. Each of the {tokens} tokens needs its own forward, so its own read: {tokens} × {read * 1e3:g} ms = "
                f"**{total:g} s** at least, about {1 / read:.1f} tokens/s at most, whatever the arithmetic costs.")
    return dict(read_seconds=read, total_seconds=total, markdown=markdown)


def lesson_2_exercise(probs=(0.5, 0.2, 0.15, 0.1, 0.05), top_k: int = 3, temperature: float = 2.0) -> dict:
    """Top-3 keeps [.5, .2, .15] / .85; T = 2 divides log p by 2, so it draws ∝ √p."""
    kept = standardized(probs, top_k=top_k)
    warmed = standardized(probs, temperature=temperature)
    roots = [value ** (1 / temperature) for value in probs]
    kept_mass = sum(sorted(probs, reverse=True)[:top_k])
    markdown = (f"**Top-{top_k}**: keep the {top_k} largest, {_vector(sorted(probs, reverse=True)[:top_k], 2)}, "
                f"zero the rest and divide by their sum {kept_mass:g}: p_adj = **{_vector(kept)}**.\n\n"
                f"**T = {temperature:g}**: the logits log p = {_vector([math.log(v) for v in probs])} are divided by "
                f"{temperature:g}: {_vector([math.log(v) / temperature for v in probs])}; exponentiated they are "
                f"p^(1/{temperature:g}) = {_vector(roots)}, summing to {sum(roots):.4f}; normalised, p_adj = "
                f"**{_vector(warmed)}**: flatter than p (the top token falls from {probs[0]:g} to {warmed[0]:.3f}).")
    return dict(top_k_probs=kept, temperature_probs=warmed, markdown=markdown)


def lesson_2_worked_example(probs=tuple(LESSON_2_PROBS), temperature: float = 0.5, top_k: int = 2) -> dict:
    """Argmax, T = 0.5 and top-2 on [.4, .3, .15, .1, .05], recomputed; the course's T = 0.5 result set beside it."""
    argmax = standardized(probs, temperature=0.0)
    sharpened = standardized(probs, temperature=temperature)
    kept = standardized(probs, top_k=top_k)
    logits = [math.log(value) for value in probs]
    exps = [math.exp(logit / temperature) for logit in logits]
    rounded_exps = [round(value, 3) for value in exps]
    from_rounded = [value / sum(rounded_exps) for value in rounded_exps]
    differs = [i for i, (ours, course) in enumerate(zip(sharpened, LESSON_2_COURSE_T_HALF)) if round(ours, 3) != course]
    slips = "; ".join(f"entry {i + 1}: {exps[i]:.4f} / {sum(exps):.4f} = **{sharpened[i]:.3f}**, not "
                      f"{LESSON_2_COURSE_T_HALF[i]:.3f}" for i in differs)
    markdown = (f"**Argmax**: p_adj = {_vector(argmax, 1)}.\n\n"
                f"**T = {temperature:g}**: log p = {_vector(logits)}; ÷ {temperature:g} = "
                f"{_vector([logit / temperature for logit in logits])}; exp = p^{1 / temperature:g} = "
                f"{_vector(exps, 4)}, sum {sum(exps):.4f}; p_adj = **{_vector(sharpened)}**.\n\n"
                f"The course prints {_vector(LESSON_2_COURSE_T_HALF)}. It is wrong in {len(differs)} entries ({slips}): "
                f"it rounded the exponentials to {_vector(rounded_exps)} before dividing by their sum, and "
                f"{_vector(rounded_exps)} / {sum(rounded_exps):.3f} = {_vector(from_rounded)}.\n\n"
                f"**Top-{top_k}**: keep {_vector(sorted(probs, reverse=True)[:top_k], 1)}, divide by "
                f"{sum(sorted(probs, reverse=True)[:top_k]):g}: p_adj = **{_vector(kept)}** (the course agrees).")
    return dict(argmax_probs=argmax, logits=logits, scaled_logits=[logit / temperature for logit in logits],
                exp_sum=sum(exps), temperature_probs=sharpened, top_k_probs=kept, differing_entries=differs,
                markdown=markdown)


def lesson_3_exercise(target_probs=tuple(LESSON_3_APPLY["target_probs"]),
                      draft_probs=tuple(LESSON_3_APPLY["draft_probs"]), vocab=("A", "B", "C")) -> dict:
    """Classical rejection: M = max p/q = .6/.2 = 3 at A, so 1/M = 1/3 of the proposals are kept."""
    classical = rejection.classical_rejection(list(target_probs), list(draft_probs), list(vocab))
    bottleneck = vocab[max(range(len(vocab)), key=lambda i: classical["ratios"][i])]
    ratios = ", ".join(f"{name}: {p:g}/{q:g} = {ratio:.3f}"
                       for name, p, q, ratio in zip(vocab, target_probs, draft_probs, classical["ratios"]))
    markdown = (f"1. Ratios p/q: {ratios}.\n"
                f"2. M = max p/q = **{classical['bound']:.4g}**, set by token **{bottleneck}**: q gives it "
                f"{draft_probs[vocab.index(bottleneck)]:g} where p wants {target_probs[vocab.index(bottleneck)]:g}, so the "
                f"envelope M·q must be stretched {classical['bound']:.3g}-fold everywhere to cover it.\n"
                f"3. A proposal is kept with probability 1/M = **{classical['acceptance']:.4f}**: {classical['bound']:.3g} "
                f"proposals per sample. Speculative sampling (lesson 4) would keep β = Σ min(p, q) = "
                f"{classical['beta']:.2f} of them and repair every rejection.")
    return dict(bound=classical["bound"], acceptance=classical["acceptance"], bottleneck=bottleneck,
                beta=classical["beta"], markdown=markdown)


def lesson_4_exercise(target_probs=tuple(LESSON_4_APPLY["target_probs"]),
                      draft_probs=tuple(LESSON_4_APPLY["draft_probs"]), vocab=("A", "B", "C")) -> dict:
    """β = .3 + .25 + .15 = 0.7; p′ = norm(max(0, p − q)) = [1, 0, 0]; min(1, p/q) = [1, .5, .75]."""
    facts = rejection.overlap(list(target_probs), list(draft_probs))
    accept = rejection.acceptance_table(list(target_probs), list(draft_probs))
    mins = " + ".join(f"{value:g}" for value in facts["min_probs"])
    positive = [max(0.0, p - q) for p, q in zip(target_probs, draft_probs)]
    per_token = "; ".join(f"{name}: min(1, {p:g}/{q:g}) = **{a:.3g}**"
                          for name, p, q, a in zip(vocab, target_probs, draft_probs, accept))
    markdown = (f"1. β = Σ min(p, q) = {mins} = **{facts['beta']:.2f}**.\n"
                f"2. max(0, p − q) = {_vector(positive, 2)}, mass {facts['residual_mass']:.2f} = 1 − β; normalised, "
                f"p′ = **{_vector(facts['residual_probs'], 2)}**: a rejection always yields the token q under-weights.\n"
                f"3. Acceptance of each proposal: {per_token}. Weighted by q they give back β: "
                f"{' + '.join(f'{q:g}·{a:.3g}' for q, a in zip(draft_probs, accept))} = {facts['beta']:.2f}.")
    return dict(beta=facts["beta"], residual_probs=facts["residual_probs"], accept_probs=accept, markdown=markdown)


SUBSCRIPTS = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def lesson_5_exercise() -> dict:
    """γ = 2, drafts B then A, r = (0.6, 0.5): .6 < .4/.5 and .5 < .4/.6, so n = 2 and the bonus is drawn from p₃."""
    vocab = ["A", "B", "C"]
    draft_tokens = torch.tensor([1, 0])  # x₁ = B, x₂ = A
    draft_probs = torch.tensor([[0.2, 0.5, 0.3], [0.6, 0.3, 0.1]], dtype=torch.float64)  # [γ, V]: q₁, q₂
    target_probs = torch.tensor([[0.3, 0.4, 0.3], [0.4, 0.4, 0.2], [0.5, 0.3, 0.2]], dtype=torch.float64)  # [γ+1, V]
    uniforms = torch.tensor([0.6, 0.5], dtype=torch.float64)  # r₁, r₂
    # The exercise asks for the distribution of the last token, not the token: any uniform serves to run verify().
    result = verify(draft_tokens, draft_probs, target_probs, uniforms, next_uniform=0.0)
    steps = []
    for i, (token, r, a) in enumerate(zip(draft_tokens.tolist(), uniforms.tolist(), result.accept_probs), start=1):
        verdict = "accept" if i <= result.accepted_count else "reject: stop here"
        sub = str(i).translate(SUBSCRIPTS)  # x₁, p₁, q₁, r₁ as the question writes them
        steps.append(f"{i}. x{sub} = {vocab[token]}: p{sub}({vocab[token]}) / q{sub}({vocab[token]}) = "
                     f"{target_probs[i - 1, token]:g} / {draft_probs[i - 1, token]:g} = {a:.3f}; r{sub} = {r:g} "
                     f"{'<' if r < a else '≥'} {a:.3f}, so **{verdict}**.")
    accepted = [vocab[token] for token in draft_tokens.tolist()[: result.accepted_count]]
    source = ("p₃, the target's distribution after both drafts (a bonus token, since nothing was rejected)"
              if result.next_kind == "bonus" else "the residual norm(max(0, p − q)) at the rejected position")
    markdown = ("\n".join(steps) + f"\n\n**n = {result.accepted_count}**. The output is {', '.join(accepted)} and then "
                f"one token t drawn from {source}: **{_vector(result.next_probs.tolist(), 1)}**. Three tokens for one "
                "target call.")
    return dict(accepted_count=result.accepted_count, accepted_tokens=accepted, next_kind=result.next_kind,
                next_probs=result.next_probs.tolist(), accept_probs=result.accept_probs, markdown=markdown)


def lesson_6_exercise(target_probs=(0.8, 0.1, 0.05, 0.05), draft_probs=(0.7, 0.15, 0.1, 0.05)) -> dict:
    """β = 0.9 and D_LK = 0.1 at T = 1; after argmax both are one-hot on the first token, so β = 1."""
    facts = rejection.overlap(list(target_probs), list(draft_probs))
    middle = [(p + q) / 2 for p, q in zip(target_probs, draft_probs)]  # M(x) = (p(x) + q(x)) / 2
    divergence = sum(abs(p - m) for p, m in zip(target_probs, middle))  # D_LK = Σ|p − M|
    greedy_target, greedy_draft = standardized(target_probs, 0.0), standardized(draft_probs, 0.0)
    greedy_beta = rejection.overlap(greedy_target, greedy_draft)["beta"]
    markdown = (f"1. β = Σ min(p, q) = {' + '.join(f'{v:g}' for v in facts['min_probs'])} = **{facts['beta']:.2f}**.\n"
                f"2. M = (p + q)/2 = {_vector(middle, 3)}; D_LK = Σ|p − M| = "
                f"{' + '.join(f'{abs(p - m):.3f}' for p, m in zip(target_probs, middle))} = **{divergence:.2f}**, "
                f"which is 1 − β = {1 - facts['beta']:.2f}, as the lemma says.\n"
                f"3. Argmax standardization: p → {_vector(greedy_target, 0)}, q → {_vector(greedy_draft, 0)}; both "
                f"models' top token is the same, so β = **{greedy_beta:g}**: every greedy draft is accepted here, "
                "higher than at T = 1, as Lesson 6 says argmax tends to be.")
    return dict(beta=facts["beta"], divergence=divergence, greedy_beta=greedy_beta, markdown=markdown)


def lesson_7_exercise(alpha: float = 0.7, c: float = 0.03, gammas=(5, 10)) -> dict:
    """α = 0.7, c = 0.03: γ = 5 gives 2.941 tokens / 1.15 = 2.558×; γ = 10 gives 3.267 / 1.3 = 2.513×; γ = 5 wins."""
    rows = [dict(gamma=g, expected_tokens=theory.expected_tokens(alpha, g), cost=g * c + 1,
                 speedup=theory.speedup(alpha, g, c)) for g in gammas]
    better = max(rows, key=lambda row: row["speedup"])["gamma"]
    best = theory.optimal_gamma(alpha, c)
    lines = [f"- γ = {row['gamma']}: E = (1 − {alpha:g}^{row['gamma'] + 1}) / (1 − {alpha:g}) = "
             f"(1 − {alpha ** (row['gamma'] + 1):.4f}) / {1 - alpha:.1f} = **{row['expected_tokens']:.3f}** tokens; "
             f"cost γc + 1 = {row['gamma']} × {c:g} + 1 = **{row['cost']:.2f}**; speedup = "
             f"{row['expected_tokens']:.3f} / {row['cost']:.2f} = **{row['speedup']:.3f}×**" for row in rows]
    markdown = ("\n".join(lines) + f"\n\n**γ = {better} is better**: the extra drafts of the longer round are accepted "
                f"too rarely (α^γ shrinks) to pay their cost. The best integer γ for α = {alpha:g}, c = {c:g} is "
                f"{best} ({theory.speedup(alpha, best, c):.3f}×).")
    return dict(rows=rows, better_gamma=better, best_gamma=best, markdown=markdown)


EXERCISES = {  # title shown in the app -> (the question, in our words; the function that answers it)
    "Lesson 1 exercise: reading 70B weights at 2 TB/s": (
        "A 70-billion-parameter model stores each weight in 16 bits and runs on hardware with 2 TB/s of memory "
        "bandwidth. How long does one read of all its weights take, and what is the least time 100 tokens can take, "
        "counting the weight reads alone?", lesson_1_exercise),
    "Lesson 2 worked example: argmax, T = 0.5, top-2": (
        "Standardize p = [0.4, 0.3, 0.15, 0.1, 0.05] three ways: argmax, temperature 0.5, and top-2.",
        lesson_2_worked_example),
    "Lesson 2 exercise: top-3 and T = 2": (
        "From p = [0.5, 0.2, 0.15, 0.1, 0.05], what distribution does top-3 sampling draw from? And temperature 2?",
        lesson_2_exercise),
    "Lesson 3 exercise: classical rejection's M": (
        "Classical rejection sampling of p = [0.6, 0.3, 0.1] with proposals from q = [0.2, 0.5, 0.3]: what are M and "
        "the probability that a proposal is kept, and which token holds the acceptance down?", lesson_3_exercise),
    "Lesson 4 exercise: β, p′ and per-token acceptance": (
        "Speculative sampling of p = [0.6, 0.25, 0.15] from q = [0.3, 0.5, 0.2]: find β, the correction distribution "
        "p′ and the probability that each token is accepted when proposed.", lesson_4_exercise),
    "Lesson 5 exercise: one round with γ = 2": (
        "γ = 2; the draft proposes B from q₁ = [0.2, 0.5, 0.3], then A from q₂ = [0.6, 0.3, 0.1]; the target gives "
        "p₁ = [0.3, 0.4, 0.3], p₂ = [0.4, 0.4, 0.2], p₃ = [0.5, 0.3, 0.2]; the uniforms are r₁ = 0.6, r₂ = 0.5. How many "
        "drafts are accepted, which tokens are output, and what distribution is the last token drawn from?",
        lesson_5_exercise),
    "Lesson 5 worked example: the correction at the third draft": (
        "In Lesson 5's round the third draft is rejected, with p₃ = [0.1, 0.1, 0.1, 0.7] and q₃ = [0.2, 0.2, 0.3, 0.3]. "
        "What is the correction drawn from?", course_worked.lesson_5_worked_example),
    "Lesson 6 worked example: α over two prefixes": (
        "Two equally likely prefixes: p = [0.5, 0.3, 0.2], q = [0.3, 0.4, 0.3], and p = [0.7, 0.2, 0.1], "
        "q = [0.1, 0.6, 0.3]. What are β at each and α?", course_worked.lesson_6_worked_example),
    "Lesson 6 exercise: β, D_LK and argmax": (
        "For p = [0.8, 0.1, 0.05, 0.05] and q = [0.7, 0.15, 0.1, 0.05], find β and D_LK(p, q), then β once both are "
        "argmax-standardized.", lesson_6_exercise),
    "Lesson 7 exercise: γ = 5 or γ = 10?": (
        "A 1B draft (c = 0.03) for a 70B target, measured α = 0.7. At γ = 5: tokens per iteration, cost per iteration "
        "and speedup. Then the speedup at γ = 10: which γ is better?", lesson_7_exercise),
    "Lesson 7 worked example: a bigram draft": (
        "A bigram model drafts for T5-XXL with α ≈ 0.2 at almost no cost. Does it help, and by how much at γ = 1?",
        course_worked.bigram_bound),
}


def exercise_markdown(title: str) -> str:
    """The question of one exercise, by its title in EXERCISES, and its worked answer."""
    if title not in EXERCISES:
        raise ValueError(f"unknown exercise {title!r}; choose one of {list(EXERCISES)}")
    question, answer = EXERCISES[title]
    return f"**Question.** {question}\n\n**Worked answer.**\n\n" + answer()["markdown"]
