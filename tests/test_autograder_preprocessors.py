from nbformat.v4 import new_code_cell, new_output

from autograder.preprocessors import STDERR_HEADER, HideHiddenTestTracebacks, KeepStderrVisible


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


def test_hidden_test_tracebacks_keep_only_the_exception_line():
    error = new_output("error", ename="AssertionError", evalue="probs differ", traceback=["secret = 1", "line"])
    cell = _grade_cell("### BEGIN HIDDEN TESTS\nsecret = 1\n### END HIDDEN TESTS", [error])
    cell, _ = HideHiddenTestTracebacks().preprocess_cell(cell, {}, 0)
    assert cell.outputs[0].traceback == ["AssertionError: probs differ"]
    visible = _grade_cell("assert False", [new_output("error", ename="E", evalue="", traceback=["assert False"])])
    assert HideHiddenTestTracebacks().preprocess_cell(visible, {}, 0)[0].outputs[0].traceback == ["assert False"]
