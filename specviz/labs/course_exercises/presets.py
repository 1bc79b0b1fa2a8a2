"""The course's (seed 002's) hand-made pairs of distributions, as presets of the Sampling lab.

Plain data, no imports: specviz.labs.sampling_lab.rejection merges these into its PRESETS, and
specviz.labs.course_exercises.exercises reads the same numbers for its worked answers, so the lab and the exercises
can never quote different pairs. Every note's figures are computed by hand from the pair and checked by
tests/test_labs_course.py against the lab's own functions.
"""

from __future__ import annotations

# The hands-on project's Experiment 1 ("Distribution Verification"), 8 tokens. Its printed output says β = 0.780;
# Σ min(p, q) = .20 + .20 + .15 + .10 + .07 + .04 + .02 + .02 = 0.80.
EXPERIMENT_1 = dict(target_probs=[0.35, 0.25, 0.15, 0.10, 0.07, 0.04, 0.02, 0.02],
                    draft_probs=[0.20, 0.20, 0.20, 0.15, 0.10, 0.08, 0.05, 0.02])

# Lesson 3 (classical rejection sampling): the marble bags, the worked example and the "Apply" exercise.
LESSON_3_MARBLES = dict(target_probs=[0.5, 0.3, 0.2], draft_probs=[0.4, 0.4, 0.2])
LESSON_3_WORKED = dict(target_probs=[0.5, 0.3, 0.1, 0.1], draft_probs=[0.3, 0.3, 0.2, 0.2])
LESSON_3_APPLY = dict(target_probs=[0.6, 0.3, 0.1], draft_probs=[0.2, 0.5, 0.3])

# Lesson 4's "Apply" exercise (speculative sampling: β, the residual p′ and the per-token acceptance).
LESSON_4_APPLY = dict(target_probs=[0.6, 0.25, 0.15], draft_probs=[0.3, 0.5, 0.2])

COURSE_PRESETS = {  # name -> vocab, target p, draft q, and what the preset teaches (the Sampling lab's preset format)
    "Course, experiment 1: the distribution check": dict(
        vocab=list("abcdefgh"), **EXPERIMENT_1,
        note="The hands-on project's pair. β = Σ min(p, q) = 0.80 (the course prints 0.780); M = p/q at 'a' = 1.75, "
             "so classical rejection keeps 1/M = 0.571 of its proposals."),
    "Course, lesson 3: the marble bags": dict(
        vocab=["red", "blue", "green"], **LESSON_3_MARBLES,
        note="Target 50/30/20 from a 40/40/20 bag: M = .5/.4 = 1.25, classical keeps 1/M = 0.8; speculative keeps "
             "β = .4 + .3 + .2 = 0.9."),
    "Course, lesson 3: worked example (M = 5/3)": dict(
        vocab=list("ABCD"), **LESSON_3_WORKED,
        note="p/q = [5/3, 1, .5, .5]: M = 5/3, classical keeps 1/M = 0.6 and accepts a drawn C with "
             ".1/(5/3 · .2) = 0.3; speculative keeps β = .3 + .3 + .1 + .1 = 0.8."),
    "Course, lesson 3 exercise (M = 3)": dict(
        vocab=list("ABC"), **LESSON_3_APPLY,
        note="p/q = [3, .6, 1/3]: token A is the bottleneck, M = 3, classical keeps 1/M = 1/3; speculative keeps "
             "β = .2 + .3 + .1 = 0.6."),
    "Course, lesson 4 exercise": dict(
        vocab=list("ABC"), **LESSON_4_APPLY,
        note="β = .3 + .25 + .15 = 0.7; p′ = norm([.3, 0, 0]) = [1, 0, 0]; per-token acceptance min(1, p/q) = "
             "[1, .5, .75]. Classical rejection: M = .6/.3 = 2, keeps 1/M = 0.5."),
}
