"""The README's two commands stay true: .ci/run runs the test command verbatim."""
from conftest import REPO


def _commands() -> list[str]:
    lines = (REPO / "README.md").read_text().split("\n")
    return [line for line in lines[:20] if line.startswith("python3 -m venv")]


def test_readme_starts_with_the_build_and_the_test_command():
    build, test = _commands()
    assert build.endswith("jupyter-book build -W --keep-going .")
    assert test.endswith("python -m pytest")


def test_ci_runs_the_readme_test_command():
    ci = (REPO / ".ci" / "run").read_text().split("\n")
    assert _commands()[1] in ci
