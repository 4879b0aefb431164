"""The packing of a chapter's class of mistakes (chapter_grading.py), on made-up entries and scores: no grading."""
from __future__ import annotations

import pytest

from chapter_grading import Entry, HandIn, blank_costly_parts, check_hand_in, check_mistake, class_hand_ins, pack


def _entries() -> list[Entry]:
    return [Entry("a1", "A", 0.0, {"A": [("x", "y")]}), Entry("a2", "A", 1.0, {"A": [("x", "z")]}),
            Entry("b1", "B", 0.0, {"B": [("x", "y")]}), Entry("a3", "A", 0.0, {"A": [("y", "z")]}),
            Entry("variant-c", "C", None, {"C": [("x", "y")]}), Entry("blank-B", "B", 0.0, replace={"B": "raise"})]


def test_a_hand_in_carries_at_most_one_entry_a_part_and_as_few_hand_ins_as_the_busiest_part_needs():
    hand_ins = pack(_entries())
    assert len(hand_ins) == 3  # part A has three entries
    for hand_in in hand_ins:
        parts = [entry.part for entry in hand_in.entries]
        assert len(parts) == len(set(parts)), hand_in.describe()
    assert sorted(entry.name for hand_in in hand_ins for entry in hand_in.entries) == sorted(e.name for e in _entries())
    assert [e.name for e in hand_ins[0].entries] == ["a1", "b1", "variant-c"]


def test_entries_that_edit_the_same_cell_never_share_a_hand_in():
    # A mistake of part A whose edits also reach cell B's code cannot sit beside a mistake of part B.
    reaching = Entry("a-reaches-b", "A", 0.0, {"A": [("x", "y")], "B": [("p", "q")]})
    hand_ins = pack([reaching, Entry("b1", "B", 0.0, {"B": [("x", "y")]})])
    assert [[e.name for e in h.entries] for h in hand_ins] == [["a-reaches-b"], ["b1"]]


def test_a_costly_part_is_handed_in_blank_where_no_entry_of_its_own_is_carried():
    hand_ins = pack(_entries())  # part B's entries sit in the first two hand-ins, none in the third
    reaching = Entry("a-reaches-b", "A", 0.0, {"A": [("x", "y")], "B": [("p", "q")]})
    hand_ins.append(HandIn("packed-04", [reaching]))
    blank_costly_parts(hand_ins, ("B",), {"A": "raise", "B": "raise NotImplementedError()"})
    blanks = [[e.name for e in hand_in.entries if e.name.startswith("blank-B-in-")] for hand_in in hand_ins]
    assert blanks == [[], [], ["blank-B-in-packed-03"], []]  # packed-04's entry edits B's cell: B stays
    blank = hand_ins[2].entries[-1]
    assert (blank.part, blank.expected, blank.replace) == ("B", 0.0, {"B": "raise NotImplementedError()"})


def test_a_whole_model_part_has_its_entries_handed_in_on_their_own_and_is_blank_everywhere_else():
    # Part B's test trains the whole model: a mistake of part A would cost B's points too, so B's
    # entries never share a hand-in, and B is blank wherever another part's entry is graded.
    stubs = {"A": "raise", "B": "raise NotImplementedError()", "C": "raise"}
    checked, again = class_hand_ins(_entries(), ("a2", "b1"), stubs, whole=("B",))
    carried = {hand_in.student: [e.name for e in hand_in.entries] for hand_in in checked}
    assert carried == {"packed-01": ["a1", "variant-c", "blank-B-in-packed-01"],
                       "packed-02": ["a2", "blank-B-in-packed-02"], "packed-03": ["a3", "blank-B-in-packed-03"],
                       "b1": ["b1"], "blank-B": ["blank-B"]}
    # a2 handed in again on its own, B blank beside it; b1 is on its own already
    assert [[e.name for e in hand_in.entries] for hand_in in again] == [["a2", "blank-B-in-a2"]]
    # a costly part is blank beside an entry handed in alone, too
    _, again = class_hand_ins(_entries(), ("a2",), stubs, costly=("C",), whole=("B",))
    assert [[e.name for e in hand_in.entries] for hand_in in again] == [["a2", "blank-C-in-a2", "blank-B-in-a2"]]
    # except beside an entry named live: the costly part runs there, the whole-model part stays blank
    _, again = class_hand_ins(_entries(), ("a2",), stubs, costly=("C",), whole=("B",), live=("a2",))
    assert [[e.name for e in hand_in.entries] for hand_in in again] == [["a2", "blank-B-in-a2"]]


def test_entries_named_to_lead_are_packed_first_and_share_the_first_hand_in():
    # chapter_grading's crash witness: the first part's blank beside a variant of the costly part.
    stubs = {"A": "raise", "B": "raise NotImplementedError()", "C": "raise"}
    checked, again = class_hand_ins(_entries(), (), stubs, costly=("C",), lead=("variant-c", "blank-B"))
    assert [e.name for e in checked[0].entries] == ["variant-c", "blank-B", "a1"]
    assert [[e.name for e in h.entries] for h in checked[1:]] == [
        ["a2", "b1", "blank-C-in-packed-02"], ["a3", "blank-C-in-packed-03"]]
    assert again == []
    with pytest.raises(AssertionError, match="do not exist"):
        class_hand_ins(_entries(), (), stubs, lead=("no-such-entry",))


def _scores(**parts) -> dict:
    return {"packed-01": {part: list(values) for part, values in parts.items()}}


def test_a_packed_hand_in_passes_when_every_part_scores_what_its_entry_predicts():
    hand_in = HandIn("packed-01", [Entry("a1", "A", 1.0), Entry("variant-c", "C", None)])
    check_hand_in(_scores(A=(1.0, 3.0), B=(2.0, 2.0), C=(4.0, 4.0)), hand_in)


@pytest.mark.parametrize("scores, message", [
    # a mistake of part A that leaked into part B, which no entry of the hand-in is in
    (dict(A=(1.0, 3.0), B=(1.0, 2.0), C=(4.0, 4.0)), "B lost points"),
    # the mistake scored other than expected
    (dict(A=(0.0, 3.0), B=(2.0, 2.0), C=(4.0, 4.0)), "a1 scored 0.0 of 3.0 in A, expected 1.0"),
    # the correct variant lost points
    (dict(A=(1.0, 3.0), B=(2.0, 2.0), C=(3.0, 4.0)), "variant-c, a correct variant, scored 3.0"),
])
def test_a_packed_hand_in_fails_when_any_part_scores_otherwise(scores, message):
    hand_in = HandIn("packed-01", [Entry("a1", "A", 1.0), Entry("variant-c", "C", None)])
    with pytest.raises(AssertionError, match=message):
        check_hand_in(_scores(**scores), hand_in)


def test_a_mistake_that_costs_nothing_fails_even_when_its_expected_score_is_full():
    # A planted mistake must lose points: expecting the maximum would make the test unable to fail.
    with pytest.raises(AssertionError, match="a1 scored 3.0 of 3.0"):
        check_mistake({"a1": {"A": [3.0, 3.0]}}, "a1", "A", 3.0)
