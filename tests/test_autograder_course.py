"""Reading an nbgrader course where it lives: its folders, its nbgrader_config.py and its mistakes."""
import pytest

from autograder.course import Course, CourseError
from conftest import course_folder


def test_a_course_folder_is_read_with_its_nbgrader_config(tmp_path):
    course = Course.at(course_folder(tmp_path, "c.Execute.timeout = 7\nc.ClearHiddenTests.begin_test_delimeter = 'X'\n"
                                         "c.LimitOutput.max_lines = 5\nc.LockCells.lock_all_cells = True\n"))
    assert (course.sources, course.submitted) == (tmp_path / "course" / "instructor", tmp_path / "course" / "handins")
    assert course.assignments() == ["lab"] and course.cell_timeout == 7
    assert course.unfollowed == ("LimitOutput.max_lines",)  # the delimiters are followed; a limit is not
    assert course.release_settings == (("ClearHiddenTests", "begin_test_delimeter", "X"),)
    assert course.release_unfollowed == ("LockCells.lock_all_cells",)
    # What kernels must not see: sources, hand-ins, nbgrader's graded notebooks and gradebook.
    assert course.sources in course.private and course.submitted in course.private
    assert tmp_path / "course" / "autograded" in course.private


def test_this_book_s_cell_limit_follows_the_profile(monkeypatch):
    # Its graded training takes about 10 s a cell in quick and up to 2 minutes in standard.
    for profile, limit in (("quick", 180), ("standard", 600), ("full", 600)):
        monkeypatch.setenv("NLPBOOK_PROFILE", profile)
        assert Course.repository().cell_timeout == limit


@pytest.mark.parametrize("config, message", [
    ("c.Execute.timeout = 'ten'\n", "Execute.timeout = 'ten' is not a number of seconds"),
    ("c.Execute.timeout = 0\n", "Execute.timeout = 0 is not a number of seconds"),
    ("c.CourseDirectory.submitted_directory = 'a/b'\n", "CourseDirectory.submitted_directory = 'a/b' is not a folder"),
    ("c.CourseDirectory.release_directory = 3\n", "CourseDirectory.release_directory = 3 is not a folder")])
def test_a_setting_the_grader_cannot_use_is_named_with_its_file(tmp_path, config, message):
    folder = course_folder(tmp_path, config)
    with pytest.raises(CourseError, match=message) as error:
        Course.at(folder)
    assert str(error.value).startswith(f"{folder / 'nbgrader_config.py'}: ")


def test_an_assignment_is_one_folder_name_with_notebooks_in_it(tmp_path):
    course = Course.at(course_folder(tmp_path))
    for bad in ("../lab", "a+b", ".hidden", ""):
        with pytest.raises(CourseError, match="is not an assignment id"):
            course.source_notebooks(bad)
    (course.sources / "empty").mkdir()
    with pytest.raises(CourseError, match=r"empty holds no source notebooks \(known assignments: lab\)"):
        course.folder("empty")
    assert course.folder("lab") == course.sources / "lab" and course.assignments() == ["lab"]


def test_the_nbgrader_configuration_carries_the_limits_and_the_steps_that_keep_hidden_tests_hidden(tmp_path):
    # The hostile class checks each of these by a student who needs it, in minutes; this names the
    # setting in a second: a limit not passed on, a deleted test not restored, a feedback step dropped.
    from autograder import preprocessors
    from autograder.course import nbgrader_config

    config = nbgrader_config(tmp_path, timeout=7, notebook_timeout=99)
    assert config.Execute.timeout == 7 and config.SandboxedExecute.notebook_timeout == 99
    assert config.OverwriteCells.add_missing_cells is True
    sanitize, autograde, feedback = (config.Autograde.sanitize_preprocessors, config.Autograde.autograde_preprocessors,
                                     config.GenerateFeedback.preprocessors)
    assert {preprocessors.ForgetForgedCells, preprocessors.DeduplicateIds, preprocessors.OverwriteCells} <= set(sanitize)
    assert {preprocessors.SandboxedExecute, preprocessors.TrustedVerdicts} <= set(autograde)
    assert {preprocessors.ScrubHiddenTests, preprocessors.DisarmOutputs, preprocessors.ClearHiddenTests} <= set(feedback)
    assert config.WithholdLateOutputs.enabled is False
    assert nbgrader_config(tmp_path, feedback_outputs="before-hidden-tests").WithholdLateOutputs.enabled is True
