"""Scores decided by the grader, not by the student's kernel.

Each test cell's checks leave the kernel as records (see :mod:`nlpbook.checks`).
Before grading, the instructor's solution runs once in the same sandbox and
its records, with the expected values and tolerances, become the *reference*.
:class:`TrustedVerdicts` then judges each test cell of a student's notebook by
comparing the student's records with the reference, in the grader's process,
and rewrites the cell's outputs so that nbgrader's own scoring (an error
output means 0 points) follows that judgement and nothing else: an error the
kernel hid does not save a wrong answer, and an error the kernel made up
after the checks does not cost a right one.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from nbformat.v4 import new_output
from nbgrader import utils
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Unicode

from nlpbook.checks import CHECK_MIME, compare_close, decode, decode_state, score_state, score_verdict

# nbgrader's own marks of a hidden block (ClearHiddenTests' defaults); a course may set its own, and
# nbgrader, like the grader, finds them anywhere in a line.
HIDDEN_BEGIN, HIDDEN_END = "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"
# The reference of a test cell that fails on the instructor's own solution: graded by nbgrader's rules.
NBGRADER_RULES = "nbgrader-rules"
HIDDEN_PASSED = "Hidden tests passed."
FAILED = "TestFailed"
# The errors the grader's execution step (autograder.execute) writes into the cells of a notebook it
# stopped: the cell that was running, and every cell after it.
KERNEL_STOPPED, NOT_RUN = "KernelStopped", "NotRun"
# What that step tells this one in the pipeline's resources, the grader's own memory, never through
# cell outputs a student's code can forge: why it stopped the notebook, and which cells it
# interrupted at a time limit (cell index -> why) before going on.
STOP_RESOURCE, INTERRUPTED_RESOURCE = "autograder_stop", "autograder_interrupted"


def is_test_cell(cell) -> bool:
    """An automatically graded test cell (nbgrader: grade, not solution)."""
    return cell.cell_type == "code" and utils.is_grade(cell) and not utils.is_solution(cell)


def weaker_test_cells(notebook) -> list[str]:
    """Grade ids of the test cells that nbgrader's own rules will grade, read from the source.

    A cell with a bare ``assert``, or without any ``expect_...`` call, judges (at least in
    part) without :mod:`nlpbook.checks`; its result is only as trustworthy as the student's
    kernel's report of its errors.
    """
    return [cell.metadata.nbgrader["grade_id"] for cell in notebook.cells
            if is_test_cell(cell) and (re.search(r"^\s*assert\b", cell.source, re.MULTILINE)
                                       or "expect_" not in cell.source)]


# The check kinds whose verdict compares a value the kernel sent with one that only the reference run
# holds (expect_close, expect_score). The others (a yes-or-no answer, a shape, a dtype) are the
# kernel's own word: code in the notebook can rewrite a later cell before it runs (an IPython input
# transformer) so that its checks send passing records without running the student's code.
VALUE_KINDS = ("close", "score")


def forgeable_test_cells(reference: dict) -> list[str]:
    """Grade ids of the test cells whose reference ``records`` (grade id -> the solution's records) make
    checks but no value check: a notebook's own code can make them pass."""
    return [grade_id for grade_id, records in reference.items()
            if isinstance(records, list) and records
            and not any(isinstance(record, dict) and record.get("kind") in VALUE_KINDS for record in records)]


def pop_records(cell) -> list:
    """Remove the check records from ``cell``'s outputs and return them, in order."""
    return _pop_placed_records(cell)[0]


def _pop_placed_records(cell) -> tuple[list, list[int]]:
    """:func:`pop_records`, and for each output left in ``cell`` how many records came before it."""
    records, kept, placed = [], [], []
    for output in cell.get("outputs", []):
        data = output.get("data", {}) if output.get("output_type") == "display_data" else {}
        if CHECK_MIME in data:
            records.append(data[CHECK_MIME])
        else:
            kept.append(output)
            placed.append(len(records))
    if "outputs" in cell:
        cell.outputs = kept
    return records, placed


def overflow_record(limit: int) -> dict:
    """The record that stands for every check record past the grader's allowance of ``limit`` bytes."""
    return {"kind": "overflow", "name": f"the notebook's check records passed the grader's limit of {limit:,} bytes",
            "actual": {"value": None}, "expected": {"value": None}}


def _judge_one(reference: dict, student) -> str | None:
    """``None`` if the student's record matches the reference one, else what is wrong."""
    name, kind = reference["name"], reference["kind"]
    hint = reference.get("hint") or ""
    if isinstance(student, dict) and student.get("kind") == "overflow":
        return f"{name}: not checked: {student['name']} (a test cell that makes checks in an endless loop?)"
    if not isinstance(student, dict) or student.get("kind") != kind:
        return f"{name}: the test stopped or ran differently here (an error in your code before this check?)"
    if kind == "score":
        return _judge_score(reference, student)
    try:
        actual = decode(student.get("actual"))
    except (ValueError, TypeError) as error:
        return f"{name}: {error}"
    expected = decode(reference["expected"])
    if kind == "close":
        try:
            compare_close(actual, expected, name, atol=reference["atol"], rtol=reference["rtol"], hint=hint)
        except AssertionError as error:
            return str(error)
        return None
    if actual == expected:
        return None
    if kind == "shape":
        shown = tuple(actual) if isinstance(actual, list) else "(not a tensor)"
        message = f"{name} has shape {shown}; expected {tuple(expected)}"
    elif kind == "dtype":
        message = f"{name} has dtype {actual}; expected {expected}"
    elif kind == "finite":
        message = f"{name} holds NaN or infinite values"
    elif kind == "tensor":
        message = f"{name} should be a torch.Tensor"
    else:  # "true": the name is the message
        message = name
    return f"{message}: {hint}" if hint and kind in ("shape", "finite") else message


def _judge_score(reference: dict, student: dict) -> str | None:
    """A trained model's verdict: its weights scored here, by the scorer and options the reference
    names (never the student's record's), against the reference's score."""
    name, scorer = reference["name"], reference["scorer"]
    try:
        score = score_state(scorer, decode_state(student.get("actual")), reference["options"])
    except Exception as error:  # malformed weights, wrong shapes: the student's model, not the grader
        return f"{name}: your trained model could not be scored ({type(error).__name__}: {error})"
    return score_verdict(scorer, score, float(decode(reference["expected"])), reference["margin"], name,
                         reference.get("hint") or "")


def judge(reference: list[dict], student: list) -> str | None:
    """Compare a test cell's records with the reference's: ``None`` if every check passes."""
    failure = first_failure(reference, student)
    return failure and failure[1]


def first_failure(reference: list[dict], student: list, stopped: str | None = None) -> tuple[int, str] | None:
    """:func:`judge`'s verdict with the index of the student's record it fell on (``None`` if every
    check passes): a record past the last one means a check that never ran.

    ``stopped`` is why the grader cut this cell short, if it did (a time limit, the kernel's
    death): missing checks are then put down to that, not to a guessed error in the student's code.
    """
    for index, expected in enumerate(reference):
        if index >= len(student):
            return index, (f"only {len(student)} of {len(reference)} checks ran; the next one is "
                           f"'{expected['name']}' ({stopped or 'an error in your code stopped the test?'})")
        problem = _judge_one(expected, student[index])
        if problem:
            return index, problem
    if len(student) > len(reference):
        return len(reference), f"{len(student)} checks ran where the test makes {len(reference)}"
    return None


def hidden_delimiters(config) -> tuple[str, str]:
    """The marks of a hidden block as ``config`` (nbgrader's, with the course's settings) sets them."""
    settings = config.ClearHiddenTests if "ClearHiddenTests" in config else {}
    return settings.get("begin_test_delimeter", HIDDEN_BEGIN), settings.get("end_test_delimeter", HIDDEN_END)


class TrustedVerdicts(NbGraderPreprocessor):
    """Judge every test cell from its records; make its outputs say exactly that verdict."""

    reference_dir = Unicode("", help="Folder of NOTEBOOK.json files: the solution's records by grade id.").tag(
        config=True)

    def preprocess(self, nb, resources):
        path = Path(self.reference_dir) / f"{resources['unique_key']}.json"
        self._reference = json.loads(path.read_text(encoding="utf-8"))
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, cell_index):
        if cell.cell_type != "code":
            return cell, resources
        records, placed = _pop_placed_records(cell)
        if not is_test_cell(cell):
            return cell, resources
        grade_id = cell.metadata.nbgrader["grade_id"]
        reference = self._reference.get(grade_id)
        hidden = hidden_delimiters(self.config)[0] in cell.source
        if reference == [] and not records or reference == NBGRADER_RULES:
            # A plain nbgrader test (asserts, or a number for partial credit), or one that fails on
            # the instructor's solution: nbgrader's own rules, as trustworthy as the kernel's report
            # of its errors (documented as weaker).
            cell.outputs = _no_free_credit(_not_the_grader_s(cell.outputs), cell.metadata.nbgrader.get("points", 0))
            if hidden:
                cell.outputs = _hidden_outputs(cell.outputs)
            return cell, resources
        errors = [o for o in cell.outputs if o.output_type == "error"]
        if reference is None:
            failure, problem = None, "no reference records for this test"
        else:
            failure = first_failure(reference, records, _cut_short(errors, resources, cell_index))
            problem = failure and failure[1]
        if failure:
            # In the kernel the checks only record (the grader judges them), so the cell ran on past
            # the one that fails: keep what it printed before that check, as a run that stopped at it
            # would have (its "the visible tests pass" line is not the verdict).
            cell.outputs = [output for output, before in zip(cell.outputs, placed) if before <= failure[0]]
        if problem is None and errors:
            # The checks passed, but the cell failed after them (a plain assert beside the
            # checks): a failure stays a failure.
            problem = (f"the test failed after its checks passed: {errors[0].ename}" if hidden
                       else f"{errors[0].ename}: {errors[0].evalue}")
        # The verdict alone decides: drop the kernel's own errors, and numbers that nbgrader
        # would read as partial credit.
        outputs = []
        for output in cell.outputs:
            if output.output_type == "error":
                continue
            if output.output_type == "execute_result":
                output = new_output("display_data", data=output.data, metadata=output.get("metadata", {}))
            outputs.append(output)
        if hidden:
            # Hidden tests: only the verdict, never what the cell printed (it might quote the tests).
            outputs = [] if problem else [new_output("stream", name="stdout", text=HIDDEN_PASSED + "\n")]
        if problem:
            outputs.append(new_output("error", ename=FAILED, evalue=problem, traceback=[f"{FAILED}: {problem}"]))
        cell.outputs = outputs
        return cell, resources


def _cut_short(errors, resources, cell_index) -> str | None:
    """Why the grader cut this cell short, from what its execution step reported (STOP_RESOURCE):
    an error of the grader's name in the cell says which cell it was, the report says why."""
    stop, names = resources.get(STOP_RESOURCE), {error.ename for error in errors}
    if stop and NOT_RUN in names:
        return f"not run: {stop}"
    if stop and KERNEL_STOPPED in names:
        return f"stopped: {stop}"
    return resources.get(INTERRUPTED_RESOURCE, {}).get(cell_index)


def partial_credit(output) -> float | None:
    """The number nbgrader reads as partial credit from an ``execute_result``, or ``None``."""
    text = output.get("data", {}).get("text/plain", "")
    text = "".join(text) if isinstance(text, list) else text
    try:
        return float(text)
    except ValueError:
        return None


def _no_free_credit(outputs, points: float) -> list:
    """``outputs`` with a partial-credit number outside 0 to ``points`` made 0: nbgrader gives NaN
    or a negative number the cell's full points and stops the whole notebook on one above them
    (infinity among them), and a test's last expression can depend on the student's code."""
    for output in outputs:
        if output.output_type == "execute_result":
            credit = partial_credit(output)
            if credit is not None and not 0 <= credit <= points:
                output["data"] = {"text/plain": "0.0"}
    return outputs


def _hidden_outputs(outputs) -> list:
    """A plain hidden test's outputs, keeping its score and nothing that could quote it."""
    return verdict_alone(outputs, "a hidden test failed", HIDDEN_PASSED)


def verdict_alone(outputs, withheld: str, passed: str, grader_messages: bool = True) -> list:
    """``outputs`` cut to a verdict.

    The grader's own failure message stays if ``grader_messages`` (a kernel's error cannot
    take its name: :func:`_not_the_grader_s`; but the message quotes the student's values);
    any other error keeps its name, if that is a short identifier, with ``withheld`` for its
    text; a result keeps only a number (nbgrader's partial credit); a cell left with nothing
    says ``passed``.
    """
    kept = []
    for output in outputs:
        if output.output_type == "error" and output.ename == FAILED and grader_messages:
            kept.append(output)
        elif output.output_type == "error":
            name = output.ename if re.fullmatch(r"[A-Za-z_]\w{0,39}", output.ename or "") else "Error"
            kept.append(new_output("error", ename=name, evalue=withheld, traceback=[f"{name}: {withheld}"]))
        elif output.output_type == "execute_result":
            credit = partial_credit(output)
            if credit is None:
                continue  # not a number: nbgrader gives full credit, as for no output
            kept.append(new_output("execute_result", data={"text/plain": repr(credit)},
                                   execution_count=output.get("execution_count")))
    return kept or [new_output("stream", name="stdout", text=passed + "\n")]


def _not_the_grader_s(outputs) -> list:
    """A plain test's own errors, none of them under the name of the grader's verdicts (the kernel
    could raise a ``TestFailed`` whose text later steps would take for the grader's words)."""
    for output in outputs:
        if output.output_type == "error" and output.ename == FAILED:
            output.ename = "Error"
            output.traceback = [line.replace(FAILED, "Error", 1) for line in output.traceback]
    return outputs


def reference_records(executed_notebook) -> tuple[dict[str, list[dict] | str], list[str]]:
    """The records of the executed solution notebook, by grade id, and the test cells that fail on it.

    A test cell that fails on the instructor's own solution is graded as nbgrader grades it
    (its reference is :data:`NBGRADER_RULES`: an error means 0, a number is partial credit), and the second
    value names each such cell with the line that failed, for the grader to report loudly.
    ``ValueError`` if the solution's check records passed the grader's allowance: its checks
    would vanish, which is the grader's setting to fix, not the instructor's test.
    """
    reference, failures, overflows = {}, [], []
    for cell in executed_notebook.cells:
        if cell.cell_type != "code":
            continue
        records = pop_records(cell)
        if not is_test_cell(cell):
            continue
        grade_id = cell.metadata.nbgrader["grade_id"]
        overflow = next((r for r in records if isinstance(r, dict) and r.get("kind") == "overflow"), None)
        if overflow:
            overflows.append(f"test cell {grade_id}: {overflow['name']} on the solution (raise "
                             "SandboxedExecute.max_record_bytes)")
            continue
        errors = [o for o in cell.outputs if o.output_type == "error"]
        # A cell without checks is graded by nbgrader's rules (``[]`` says so).
        problem = (": ".join(filter(None, (errors[0].ename, errors[0].evalue))) + _failing_line(errors[0])
                   if errors else judge(records, records))
        if problem:
            failures.append(f"{grade_id} ({problem})")
        reference[grade_id] = NBGRADER_RULES if problem else records
    if overflows:
        raise ValueError("; ".join(overflows))
    return reference, failures


def _failing_line(error) -> str:
    """`` (at: LINE)``: the last source line an IPython traceback points at, without its colours."""
    lines = []
    for frame in error.get("traceback", []):
        plain = re.sub(r"\x1b\[[0-9;]*m", "", frame)
        lines += [m.group(1).strip() for m in re.finditer(r"^-+> *\d+ (.*)$", plain, re.MULTILINE)]
    return f" (at: {lines[-1]})" if lines else ""
