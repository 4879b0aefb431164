import copy

import jsonschema
import pytest
from nbformat.v4 import new_code_cell, new_notebook, new_output
from nbgrader.nbgraderformat import MetadataValidator

from autograder.preprocessors import (PASSED, SCRUBBED, STDERR_HEADER, WITHHELD, CheckCompiledCellMetadata,
                                     CompiledMetadataValidator, KeepStderrVisible, ScrubHiddenTests,
                                     WithholdLateOutputs)
from autograder.verdicts import FAILED


def _grade_cell(source, outputs):
    cell = new_code_cell(source, outputs=outputs)
    cell.metadata["nbgrader"] = {"grade": True, "grade_id": "t", "points": 1, "solution": False, "locked": True}
    return cell


def test_stderr_of_a_test_cell_becomes_marked_stdout():
    cell = _grade_cell("x", [new_output("stream", name="stderr", text="UserWarning: careful\n")])
    cell, _ = KeepStderrVisible().preprocess_cell(cell, {}, 0)
    assert cell.outputs[0].name == "stdout" and cell.outputs[0].text == STDERR_HEADER + "UserWarning: careful\n"


def test_stderr_outside_test_cells_and_errors_are_left_alone():
    plain = new_code_cell("x", outputs=[new_output("stream", name="stderr", text="w")])
    assert KeepStderrVisible().preprocess_cell(plain, {}, 0)[0].outputs[0].name == "stderr"
    error = new_output("error", ename="AssertionError", evalue="wrong", traceback=["a", "b"])
    cell = KeepStderrVisible().preprocess_cell(_grade_cell("x", [error]), {}, 0)[0]
    assert cell.outputs[0].output_type == "error"


def test_quotations_of_hidden_tests_are_scrubbed_from_every_output():
    hidden = _grade_cell("# Hidden tests\n### BEGIN HIDDEN TESTS\n_secret_value = compute(42)\nok = 1\n"
                         "### END HIDDEN TESTS", [])
    leak = "  _secret_value = compute(42)  "
    student = new_code_cell("print(In)", outputs=[
        new_output("stream", name="stdout", text=f"before\n{leak}\nafter\n"),
        new_output("error", ename="E", evalue=leak, traceback=[leak]),
        new_output("display_data", data={"text/plain": leak, "text/html": [leak]}),
    ])
    nb, _ = ScrubHiddenTests().preprocess(new_notebook(cells=[hidden, student]), {})
    outputs = nb.cells[1].outputs
    assert outputs[0].text == f"before\n{SCRUBBED}\nafter\n"
    assert outputs[1].evalue == SCRUBBED and outputs[1].traceback == [SCRUBBED]
    assert outputs[2].data["text/plain"] == SCRUBBED and outputs[2].data["text/html"] == [SCRUBBED]
    # Short lines ("ok = 1") are too common to scrub: they would eat honest output.
    nb.cells[1].outputs = [new_output("stream", name="stdout", text="ok = 1\n")]
    assert ScrubHiddenTests().preprocess(nb, {})[0].cells[1].outputs[0].text == "ok = 1\n"


def _late_outputs_notebook():
    """A student cell and a test before a hidden test, then the same after it, each printing a
    disguised copy of the hidden test (reversed), as a hostile student's code could."""
    leak = "".join(reversed("_secret_value = compute(42)"))
    printed = new_output("stream", name="stdout", text=leak + "\n")
    early_student = new_code_cell("def f(): ...", outputs=[printed])
    early_test = _grade_cell("expect_close(f(), ...)", [printed])
    hidden = _grade_cell("### BEGIN HIDDEN TESTS\n_secret_value = compute(42)\n### END HIDDEN TESTS",
                         [new_output("stream", name="stdout", text="Hidden tests passed.\n")])
    late_student = new_code_cell("g = f", outputs=[printed, new_output("display_data", data={"text/plain": leak})])
    late_failed = _grade_cell("expect_close(g(), ...)", [printed, new_output(
        "error", ename=FAILED, evalue="g(): max difference 0.5", traceback=[f"{FAILED}: g(): max difference 0.5"])])
    late_plain = _grade_cell("assert g() == 1", [printed, new_output(
        "error", ename="AssertionError", evalue=leak, traceback=[leak]),
        new_output("execute_result", data={"text/plain": "0.5"}, execution_count=7)])
    late_custom = _grade_cell("assert g() == 1", [new_output(
        "error", ename=leak.replace(" ", "_") * 3, evalue="", traceback=[])])
    late_passed = _grade_cell("expect_close(g(), ...)", [printed])
    late_silent = new_code_cell("h = 1", outputs=[])
    late_marked = new_code_cell("# BEGIN HIDDEN TESTS\nprint(secret)\n# END HIDDEN TESTS", outputs=[printed])
    cells = [early_student, early_test, hidden, late_student, late_failed, late_plain, late_custom, late_passed,
             late_silent, late_marked]
    return new_notebook(cells=cells), leak


def test_by_default_the_feedback_keeps_every_output_as_nbgrader_does():
    notebook, leak = _late_outputs_notebook()
    kept, _ = WithholdLateOutputs().preprocess(copy.deepcopy(notebook), {})
    assert kept == notebook


def test_withheld_late_outputs_keep_the_verdicts_and_nothing_the_students_code_printed():
    notebook, leak = _late_outputs_notebook()
    before = [cell.outputs for cell in notebook.cells[:2]]
    nb, _ = WithholdLateOutputs(enabled=True).preprocess(notebook, {})
    assert [cell.outputs for cell in nb.cells[:2]] == before  # before the first hidden test
    hidden, student, failed, plain, custom, passed, silent, marked = (cell.outputs for cell in nb.cells[2:])
    assert [o.text for o in hidden] == [PASSED + "\n"]
    assert [o.text for o in student] == [WITHHELD + "\n"] and silent == []
    # The grader's message quotes the student's values, which code can choose: the verdict alone.
    assert [(o.ename, o.evalue) for o in failed] == [(FAILED, "(details withheld)")]
    assert [(o.output_type, o.get("ename"), o.get("evalue")) for o in plain] == [
        ("error", "AssertionError", "(details withheld)"), ("execute_result", None, None)]
    assert plain[1].data == {"text/plain": "0.5"}  # nbgrader's partial credit, as a number only
    assert [o.ename for o in custom] == ["Error"]  # an exception's name can carry a message too
    assert [o.text for o in passed] == [PASSED + "\n"]
    assert [o.text for o in marked] == [WITHHELD + "\n"]  # a student's cell with the marks is not a test
    assert leak not in str(nb.cells[2:])


def _metadata_cases():
    """Notebooks nbgrader's metadata check passes or refuses, each for a different reason."""
    good = dict(grade=True, grade_id="t", points=1, solution=False, locked=True, schema_version=3)
    cases = {"valid": [good, dict(good, grade_id="u", grade=False, points=0)]}
    cases["points not a number"] = [dict(good, points="one")]
    cases["grade id missing"] = [{key: value for key, value in good.items() if key != "grade_id"}]
    cases["repeated grade id"] = [good, dict(good)]
    cases["old schema"] = [dict(good, schema_version=1)]
    cases["newer schema"] = [dict(good, schema_version=9)]
    notebooks = {}
    for name, metas in cases.items():
        cells = [new_code_cell("x") for _ in metas] + [new_code_cell("plain, no metadata")]
        for cell, meta in zip(cells, metas):
            cell.metadata["nbgrader"] = meta
        notebooks[name] = new_notebook(cells=cells)
    return notebooks


def test_the_compiled_metadata_check_gives_nbgrader_s_verdicts_and_messages():
    def verdict(validator, nb):
        try:
            validator.validate_nb(nb)
            return None
        except Exception as error:  # noqa: BLE001 - the exception is what is compared
            return type(error), str(error)

    notebooks = _metadata_cases()
    for name, nb in notebooks.items():
        assert verdict(CompiledMetadataValidator(), nb) == verdict(MetadataValidator(), nb), name
    assert verdict(MetadataValidator(), notebooks["valid"]) is None
    assert all(verdict(MetadataValidator(), nb) is not None for name, nb in notebooks.items() if name != "valid")


def test_the_compiled_metadata_check_refuses_a_notebook_as_nbgrader_does():
    notebooks = _metadata_cases()
    assert CheckCompiledCellMetadata().preprocess(notebooks["valid"], {})[0] is notebooks["valid"]
    with pytest.raises(jsonschema.ValidationError, match="nbgrader metadata may be corrupted"):
        CheckCompiledCellMetadata().preprocess(notebooks["points not a number"], {})
