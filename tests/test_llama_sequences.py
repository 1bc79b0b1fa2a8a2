"""A token tree as llama.cpp sequences (models/llama_sequences.py): each path one sequence, each entry in the
sequences of the paths through it, copies made before a path branches off an entry already in the cache."""

import pytest

from specviz.models.llama_sequences import TreeSequences


def paths_seen(plan_members, parents):
    """For each sequence, the entries (of one batch) that carry it."""
    seen: dict[int, list[int]] = {}
    for entry, members in enumerate(plan_members):
        for sequence in members:
            seen.setdefault(sequence, []).append(entry)
    return seen


def test_two_siblings_and_a_grandchild_in_one_batch():
    sequences = TreeSequences(8)
    plan = sequences.add([-1, -1, 0], base=10)
    assert plan.positions == [10, 10, 11]
    assert plan.members == [[0], [1], [0]]
    assert plan.copies == [(0, 1, 10)]  # the second path gets the committed text, positions 0..9


def test_a_branch_deep_in_one_batch_joins_its_ancestors_in_that_batch():
    # 0 ─ 1 ─ 2        entry 3 is a second child of entry 1, entry 4 a second child of the root
    #       └ 3
    # 4
    sequences = TreeSequences(8)
    plan = sequences.add([-1, 0, 1, 1, -1], base=5)
    assert plan.positions == [5, 6, 7, 7, 5]
    assert plan.members == [[0, 1], [0, 1], [0], [1], [2]]
    assert plan.copies == [(0, 1, 5), (0, 2, 5)]  # both new paths share only the committed text in the cache
    assert paths_seen(plan.members, sequences.parents) == {0: [0, 1, 2], 1: [0, 1, 3], 2: [4]}


def test_a_tree_grown_a_depth_at_a_time_copies_each_branch_from_the_cache():
    sequences = TreeSequences(8)
    first = sequences.add([-1, -1], base=3)  # two children of the committed text
    assert first.members == [[0], [1]] and first.copies == [(0, 1, 3)]
    second = sequences.add([0, 0, 1], base=3)  # entries 2, 3 under entry 0; entry 4 under entry 1
    assert second.positions == [4, 4, 4]
    assert second.members == [[0], [2], [1]]
    assert second.copies == [(0, 2, 4)]  # entry 0's path (positions < 4) into a new sequence for entry 3
    assert sequences.kept([0, 3]) == 2 and sequences.kept([1, 4]) == 1 and sequences.kept([0, 2]) == 0
    assert sequences.kept([]) == 0


def test_a_path_is_checked_and_a_tree_beyond_the_sequences_refused_whole():
    sequences = TreeSequences(2)
    sequences.add([-1, -1], base=0)
    with pytest.raises(ValueError, match="not a path"):
        sequences.kept([1, 0])
    with pytest.raises(ValueError, match="more than 2 paths"):
        sequences.add([0, -1], base=0)  # entry 2 extends sequence 0; a third path at entry 3 does not fit
    assert sequences.parents == [-1, -1] and sequences.tips == {0: 0, 1: 1}  # nothing of the refused batch stays
    with pytest.raises(ValueError, match="earlier entry"):
        sequences.add([5], base=0)
    sequences.reset()
    assert sequences.parents == [] and sequences.tips == {0: -1}


def test_a_context_for_chains_refuses_a_branch_and_takes_a_chain_given_as_a_tree():
    sequences = TreeSequences(8)
    assert sequences.add([-1, 0], base=4, branches=False).members == [[0], [0]]
    with pytest.raises(ValueError, match="takes chains only"):
        sequences.add([0], base=4, branches=False)  # a second child of entry 0
    assert sequences.parents == [-1, 0]
