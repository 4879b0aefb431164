"""The grader's own judgement of test cells, from check records (no kernel needed)."""
import pytest
import torch
from nbformat.v4 import new_code_cell, new_output

from autograder.verdicts import (FAILED, HIDDEN_PASSED, INTERRUPTED_RESOURCE, KERNEL_STOPPED, NOT_RUN,
                                 STOP_RESOURCE, TrustedVerdicts, judge, pop_records)
from nlpbook.checks import CHECK_MIME, encode


def _reference(kind, name, expected, **details):
    return {"kind": kind, "name": name, "actual": encode(expected), "expected": encode(expected), **details}


def _student(kind, actual, strict=True):
    return {"kind": kind, "name": "anything the student wrote", "actual": encode(actual, strict=strict)}


CLOSE = _reference("close", "output", torch.tensor([1.0, float("-inf")]), atol=1e-5, rtol=1e-4, hint="")


def test_matching_records_pass_and_a_close_value_within_tolerance_passes():
    assert judge([CLOSE], [_student("close", torch.tensor([1.000001, float("-inf")]))]) is None


@pytest.mark.parametrize("student, message", [
    ([_student("close", torch.tensor([1.1, float("-inf")]))], "output differs from the expected values"),
    ([_student("close", torch.tensor([1.0, 0.0]))], "output differs"),
    ([_student("close", torch.tensor([1.0]))], "output has shape (1,); expected (2,)"),
    ([_student("close", [1.0, float("-inf")])], "not a tensor (a list)"),
    ([], "only 0 of 1 checks ran"),
    ([_student("shape", [2])], "the test stopped or ran differently"),
    ([_student("close", torch.tensor([1.0, float("-inf")]))] * 2, "2 checks ran where the test makes 1"),
    ([{"kind": "close", "actual": {"shape": [2], "data": "AAAA"}}], "data does not match the shape"),
    (["not a record"], "the test stopped or ran differently"),
])
def test_wrong_missing_extra_or_forged_records_fail_with_a_reason(student, message):
    assert message in judge([CLOSE], student)


def test_yes_no_checks_compare_exactly():
    reference = [_reference("true", "self.q_proj should be an nn.Linear", True),
                 _reference("shape", "probs", [2, 3], hint="(B, T)"), _reference("dtype", "out", "torch.float32")]
    assert judge(reference, [_student("true", True, False), _student("shape", [2, 3], False),
                             _student("dtype", "torch.float32", False)]) is None
    assert judge(reference, [_student("true", False, False)] + [None] * 2) == "self.q_proj should be an nn.Linear"
    problem = judge(reference, [_student("true", True, False), _student("shape", [3, 2], False)])
    assert problem == "probs has shape (3, 2); expected (2, 3): (B, T)"


def _test_cell(source, outputs, grade_id="t"):
    cell = new_code_cell(source, outputs=outputs)
    cell.metadata["nbgrader"] = {"grade": True, "grade_id": grade_id, "points": 1, "solution": False,
                                 "locked": True}
    return cell


def _record_output(record):
    return new_output("display_data", data={CHECK_MIME: record})


def _verdicts(reference=None):
    step = TrustedVerdicts()
    step._reference = reference if reference is not None else {"t": [CLOSE]}
    return step


def test_a_passing_verdict_removes_partial_credit_numbers():
    good = _student("close", torch.tensor([1.0, float("-inf")]))
    cell = _test_cell("check()", [new_output("stream", name="stdout", text="hello\n"), _record_output(good),
                                  new_output("execute_result", data={"text/plain": "0.0"}, execution_count=1)])
    cell, _ = _verdicts().preprocess_cell(cell, {}, 0)
    assert [o.output_type for o in cell.outputs] == ["stream", "display_data"]
    assert CHECK_MIME not in cell.outputs[1].data


def test_a_failing_check_cuts_what_the_cell_printed_after_it_as_a_run_stopped_there_would():
    # In the kernel a check only records, so the cell ran on and printed its "pass" line; the feedback
    # shows what a run that raised at the failing check would have shown, then the verdict.
    bad = _student("close", torch.tensor([2.0, float("-inf")]))
    good = _student("close", torch.tensor([1.0, float("-inf")]))

    def printed(first, second):
        cell = _test_cell("check()\ncheck()\nprint('pass')", [
            new_output("stream", name="stdout", text="before\n"), _record_output(first),
            new_output("stream", name="stdout", text="between\n"), _record_output(second),
            new_output("stream", name="stdout", text="Part 1: the visible tests pass.\n")])
        cell, _ = _verdicts({"t": [CLOSE, CLOSE]}).preprocess_cell(cell, {}, 0)
        return [o.get("text") or o.ename for o in cell.outputs]

    assert printed(good, good) == ["before\n", "between\n", "Part 1: the visible tests pass.\n"]
    assert printed(bad, good) == ["before\n", FAILED]
    assert printed(good, bad) == ["before\n", "between\n", FAILED]
    # a check that never ran: everything the cell printed came before it
    cell = _test_cell("check()", [new_output("stream", name="stdout", text="before\n"), _record_output(good)])
    cell, _ = _verdicts({"t": [CLOSE, CLOSE]}).preprocess_cell(cell, {}, 0)
    assert [o.get("text") or o.ename for o in cell.outputs] == ["before\n", FAILED]


@pytest.mark.parametrize("hidden", [False, True])
def test_an_error_beside_passing_checks_still_fails_the_cell(hidden):
    # A plain assert after the checks: nbgrader would give 0, and so do we; hidden, it is not quoted.
    good = _student("close", torch.tensor([1.0, float("-inf")]))
    source = "### BEGIN HIDDEN TESTS\ncheck()\nassert secret\n### END HIDDEN TESTS" if hidden else "check()"
    error = new_output("error", ename="AssertionError", evalue="secret is wrong", traceback=["assert secret"])
    cell, _ = _verdicts().preprocess_cell(_test_cell(source, [_record_output(good), error]), {}, 0)
    assert cell.outputs[-1].output_type == "error" and cell.outputs[-1].ename == FAILED
    assert "AssertionError" in cell.outputs[-1].evalue
    assert ("secret" in str(cell.outputs)) == (not hidden)


def _plain_verdicts():
    step = TrustedVerdicts()
    step._reference = {"t": []}  # the solution's cell made no checks: nbgrader's rules
    return step


def test_a_plain_test_cell_keeps_nbgrader_rules_errors_and_partial_credit():
    from nbgrader.utils import determine_grade

    error = new_output("error", ename="AssertionError", evalue="wrong", traceback=["assert f(1) == 2"])
    partial = new_output("execute_result", data={"text/plain": "0.5"}, execution_count=1)
    for outputs, score in (([error], 0), ([partial], 0.5), ([], 1)):
        cell, _ = _plain_verdicts().preprocess_cell(_test_cell("assert f(1) == 2", outputs), {}, 0)
        assert determine_grade(cell)[0] == score


@pytest.mark.parametrize("hidden", [False, True])
def test_a_partial_credit_outside_zero_to_the_points_is_worth_nothing(hidden):
    # nbgrader gives a number below 0 (NaN included) the cell's full points and stops the whole
    # notebook on one above them; a test's last expression, such as score(student_answer()), is
    # the student's to make NaN or infinite.
    from nbgrader.utils import determine_grade

    source = "### BEGIN HIDDEN TESTS\nscore(f())\n### END HIDDEN TESTS" if hidden else "score(f())"
    for text, score in (("nan", 0), ("-1", 0), ("inf", 0), ("1.5", 0), ("0.5", 0.5), ("1", 1)):
        partial = new_output("execute_result", data={"text/plain": text}, execution_count=1)
        cell, _ = _plain_verdicts().preprocess_cell(_test_cell(source, [partial]), {}, 0)
        assert determine_grade(cell)[0] == score, text


def test_a_plain_hidden_test_cell_keeps_its_score_and_quotes_nothing():
    from nbgrader.utils import determine_grade

    source = "### BEGIN HIDDEN TESTS\nassert f(1) == 2\n### END HIDDEN TESTS"
    error = new_output("error", ename="AssertionError", evalue="f(1) == 2", traceback=["assert f(1) == 2"])
    cell, _ = _plain_verdicts().preprocess_cell(_test_cell(source, [error]), {}, 0)
    assert determine_grade(cell)[0] == 0 and "f(1)" not in str(cell.outputs)
    partial = new_output("execute_result", data={"text/plain": "0.25", "text/html": "<b>f(1)</b>"},
                         execution_count=1)
    cell, _ = _plain_verdicts().preprocess_cell(_test_cell(source, [partial]), {}, 0)
    assert determine_grade(cell)[0] == 0.25 and "f(1)" not in str(cell.outputs)
    cell, _ = _plain_verdicts().preprocess_cell(_test_cell(source, []), {}, 0)
    assert determine_grade(cell)[0] == 1 and cell.outputs[0].text == HIDDEN_PASSED + "\n"


def test_a_student_cell_with_checks_where_the_solution_made_none_fails():
    good = _student("close", torch.tensor([1.0, float("-inf")]))
    cell, _ = _plain_verdicts().preprocess_cell(_test_cell("check()", [_record_output(good)]), {}, 0)
    assert cell.outputs[-1].ename == FAILED


def test_a_failing_verdict_is_an_error_even_when_the_kernel_hid_every_error():
    cell = _test_cell("check()", [new_output("stream", name="stdout", text="all tests pass!\n")])
    cell, _ = _verdicts().preprocess_cell(cell, {}, 0)
    assert cell.outputs[-1].output_type == "error" and cell.outputs[-1].ename == FAILED
    assert "only 0 of 1 checks ran" in cell.outputs[-1].evalue


@pytest.mark.parametrize("source", ["check()", "### BEGIN HIDDEN TESTS\ncheck()\n### END HIDDEN TESTS"],
                         ids=["visible", "hidden"])
def test_a_test_cell_the_grader_cut_short_says_why_instead_of_guessing_at_an_error(source):
    limit = "the notebook ran past its time limit of 25 s"
    good = _student("close", torch.tensor([1.0, float("-inf")]))
    reference = {"t": [CLOSE, CLOSE]}

    def verdict(outputs, resources, index=3):
        cell, _ = _verdicts(reference).preprocess_cell(_test_cell(source, outputs), resources, index)
        assert [o.ename for o in cell.outputs] == [FAILED]  # the verdict alone
        return cell.outputs[-1].evalue

    def grader_error(name, text):
        return new_output("error", ename=name, evalue=text, traceback=[])

    stopped = {STOP_RESOURCE: limit, INTERRUPTED_RESOURCE: {}}
    assert verdict([grader_error(NOT_RUN, f"not run: {limit}")], stopped) == (
        f"only 0 of 2 checks ran; the next one is 'output' (not run: {limit})")
    assert verdict([_record_output(good), grader_error(KERNEL_STOPPED, limit)], stopped) == (
        f"only 1 of 2 checks ran; the next one is 'output' (stopped: {limit})")
    interrupted = {INTERRUPTED_RESOURCE: {3: "interrupted: this cell ran past its time limit of 10 s"}}
    assert verdict([grader_error("KeyboardInterrupt", "")], interrupted) == (
        "only 0 of 2 checks ran; the next one is 'output' (interrupted: this cell ran past its time limit of 10 s)")
    # Only the execution step's report gives a reason: a NotRun error the student raised, or the
    # report of another cell, changes nothing.
    guess = "only 0 of 2 checks ran; the next one is 'output' (an error in your code stopped the test?)"
    assert verdict([grader_error(NOT_RUN, "not run: the dog ate it")], {}) == guess
    assert verdict([grader_error("KeyboardInterrupt", "")], interrupted, index=4) == guess


def test_hidden_test_cells_show_only_the_verdict():
    source = "# Hidden tests\n### BEGIN HIDDEN TESTS\ncheck()\n### END HIDDEN TESTS"
    good = _student("close", torch.tensor([1.0, float("-inf")]))
    cell = _test_cell(source, [new_output("stream", name="stdout", text="secret\n"), _record_output(good)])
    cell, _ = _verdicts().preprocess_cell(cell, {}, 0)
    assert [o.get("text") for o in cell.outputs] == [HIDDEN_PASSED + "\n"]
    cell = _test_cell(source, [new_output("stream", name="stdout", text="secret\n")])
    cell, _ = _verdicts().preprocess_cell(cell, {}, 0)
    assert [o.output_type for o in cell.outputs] == ["error"]


def test_records_outside_test_cells_are_dropped_and_unknown_test_cells_fail():
    plain = new_code_cell("x", outputs=[_record_output(CLOSE)])
    assert _verdicts().preprocess_cell(plain, {}, 0)[0].outputs == []
    assert pop_records(plain) == []
    cell, _ = _verdicts().preprocess_cell(_test_cell("x", [], grade_id="added_by_student"), {}, 0)
    assert "no reference records" in cell.outputs[-1].evalue


def test_test_cells_that_fail_on_the_solution_are_named_with_their_line_and_graded_by_nbgraders_rules():
    from autograder.verdicts import NBGRADER_RULES, reference_records
    from nbformat.v4 import new_notebook

    traceback = ["\x1b[0;31mAssertionError\x1b[0m  Traceback (most recent call last)",
                 "Cell \x1b[0;32mIn[3], line 2\x1b[0m\n\x1b[1;32m      1\x1b[0m x = 1\n"
                 "\x1b[0;32m----> 2\x1b[0m \x1b[38;5;28;01massert\x1b[39;00m x \x1b[38;5;241m==\x1b[39m 2\n"]
    failing = [_test_cell("x = 1\nassert x == 2", [new_output("error", ename="AssertionError", evalue="",
                                                               traceback=traceback)], grade_id=name)
               for name in ("first", "second")]
    checked = _test_cell("x", [_record_output(CLOSE)], grade_id="checked")
    notebook = new_notebook(cells=[*failing, _test_cell("assert True", [], grade_id="fine"), checked])
    reference, failures = reference_records(notebook)
    assert failures == ["first (AssertionError (at: assert x == 2))", "second (AssertionError (at: assert x == 2))"]
    # Graded as plain nbgrader grades them (an empty reference), the others as before.
    assert reference == {"first": NBGRADER_RULES, "second": NBGRADER_RULES, "fine": [], "checked": [CLOSE]}
    # Under nbgrader's rules a student's passing cell keeps its points, whatever records it made.
    student = _test_cell("x", [_record_output(CLOSE)], grade_id="first")
    cell, _ = _verdicts({"first": NBGRADER_RULES}).preprocess_cell(student, {}, 0)
    assert not [o for o in cell.outputs if o.output_type == "error"]


def test_test_cells_that_nbgrader_rules_will_grade_are_found_in_the_source():
    from nbformat.v4 import new_notebook

    from autograder.verdicts import weaker_test_cells

    notebook = new_notebook(cells=[_test_cell("expect_close(f(), 1.0, 'f')", [], grade_id="checked"),
                                   _test_cell("expect_close(f(), 1.0, 'f')\nassert g()", [], grade_id="mixed"),
                                   _test_cell("assert f() == 1", [], grade_id="plain"),
                                   _test_cell("print(f())", [], grade_id="no_checks")])
    assert weaker_test_cells(notebook) == ["mixed", "plain", "no_checks"]


def test_test_cells_judged_only_on_what_the_kernel_says_are_found_in_the_reference():
    from autograder.verdicts import forgeable_test_cells

    reference = {"value": [_reference("true", "a flag", True), CLOSE],  # one value check is enough
                 "yes_no": [_reference("true", "a flag", True), _reference("shape", "output", [2, 3]),
                            _reference("dtype", "output", "torch.float32")],
                 "trained": [_reference("score", "accuracy", 0.8)],
                 "plain": [],  # nbgrader's rules: named as weaker, not here
                 "fails_on_the_solution": "nbgrader-rules"}
    assert forgeable_test_cells(reference) == ["yes_no"]


# ---------------------------------------------------------------- trained models, scored here


def _score_records(characters=2_000):
    """A reference record for a tiny CharRNN on the Bible's characters, and that model's weights."""
    from nlpbook.charlm import CharRNN, bible_char_data
    from nlpbook.checks import encode_state, score_state

    torch.manual_seed(0)
    state = CharRNN(len(bible_char_data().chars), embed=4, hidden=8).state_dict()
    options = {"characters": characters, "chunk": 64}
    reference = {"kind": "score", "name": "validation perplexity", "actual": encode_state(state),
                 "expected": encode(score_state("char_rnn_perplexity", state, options)),
                 "scorer": "char_rnn_perplexity", "options": options, "margin": 0.5, "hint": "train longer"}
    return reference, state


def _student_state(state):
    from nlpbook.checks import encode_state

    return {"kind": "score", "name": "anything", "actual": encode_state(state)}


def test_a_trained_model_is_scored_by_the_grader_against_the_reference_and_its_margin():
    reference, state = _score_records()
    assert judge([reference], [_student_state(state)]) is None
    # Within the margin of the reference's perplexity: still a pass.
    better = {name: value.clone() for name, value in state.items()}
    better["out.bias"] += 0.01 * torch.arange(len(better["out.bias"])) / len(better["out.bias"])
    assert judge([reference], [_student_state(better)]) is None
    # A model whose scores favour the rarest characters is far worse: a failure that says by how much.
    worse = {name: value.clone() for name, value in state.items()}
    worse["out.bias"] = torch.arange(len(worse["out.bias"]), dtype=torch.float32)
    message = judge([reference], [_student_state(worse)])
    assert message.startswith("validation perplexity is ") and "the target is at most" in message
    assert message.endswith(": train longer")


def test_a_score_record_cannot_choose_its_scorer_or_pass_with_broken_weights():
    reference, state = _score_records()
    forged = _student_state(state) | {"scorer": "anything", "options": {"characters": 1}}
    assert judge([reference], [forged]) is None  # the reference's scorer and options, not the student's
    nan = {name: torch.full_like(value, float("nan")) for name, value in state.items()}
    assert "the target is at most" in judge([reference], [_student_state(nan)])
    missing = {name: value for name, value in state.items() if name != "out.bias"}
    assert "could not be scored (ValueError" in judge([reference], [_student_state(missing)])
    wrong_shape = state | {"rnn.weight_hh_l0": torch.zeros(3, 3)}
    assert "could not be scored" in judge([reference], [_student_state(wrong_shape)])
    from nlpbook.checks import encode_state

    assert "not a state dict (a list)" in judge([reference], [{"kind": "score", "actual": encode_state([1.0])}])


def test_records_past_the_allowance_fail_the_checks_they_replace_and_stop_a_reference_run():
    from autograder.verdicts import overflow_record, reference_records
    from nbformat.v4 import new_notebook

    # A student whose records passed the limit: the overflow record stands where the next check was.
    assert "passed the grader's limit of 1,000 bytes" in judge([CLOSE], [overflow_record(1000)])
    # The solution's records passing it must stop the grading: its checks would otherwise vanish,
    # and a cell whose reference makes no check is graded by nbgrader's weaker rules.
    overflowed = _test_cell("x", [_record_output(CLOSE), _record_output(overflow_record(1000))], grade_id="big")
    with pytest.raises(ValueError, match="test cell big: the notebook's check records passed"):
        reference_records(new_notebook(cells=[overflowed]))



@pytest.mark.parametrize("hidden", [False, True])
def test_a_plain_test_s_own_error_cannot_pass_for_the_grader_s_verdict(hidden):
    # A plain test keeps the kernel's errors (nbgrader's rules); one raised under the name of the
    # grader's verdicts would be kept as the grader's words where feedback shows verdicts alone.
    from nbgrader.utils import determine_grade

    from autograder.verdicts import verdict_alone

    source = "### BEGIN HIDDEN TESTS\nassert f(1) == 2\n### END HIDDEN TESTS" if hidden else "assert f(1) == 2"
    forged = new_output("error", ename=FAILED, evalue="text the student chose", traceback=[f"{FAILED}: text"])
    cell, _ = _plain_verdicts().preprocess_cell(_test_cell(source, [forged]), {}, 0)
    assert determine_grade(cell)[0] == 0 and FAILED not in str(cell.outputs)
    [kept] = verdict_alone(cell.outputs, "(withheld)", "passed")
    assert kept.ename == "Error" and "text the student chose" not in str(kept)
