"""Every mistake an exercise page says the hidden tests catch is a planted bug of that chapter's grading test.

Each chapter's ``book/CH/exercises.md`` lists "the classic mistakes of this chapter" in a
bulleted list.  Right after the list, a MyST comment block (lines that begin with ``%``,
which the book does not render) names, bullet by bullet, the students of the chapter's
``MISTAKES`` table (``tests/test_grading_CH.py``) that plant those mistakes::

    % The mistakes above, bullet by bullet, as planted in tests/test_grading_02_rnns.py:
    % - step-without-tanh step-relu step-drops-hidden-bias
    % - ...

So the page and the table cannot drift apart: a bullet with no planted bug, a name
that is not in the table, or a planted bug the page does not describe fails here.
Fast: it reads the pages and imports the tables, and grades nothing.
"""
from __future__ import annotations

import importlib
import re

import pytest

from autograder.course import REPO_ROOT as REPO, assignments
from chapter_grading import ChapterGrading
CHAPTERS = assignments()  # every exercise of the course, read from solutions/
INTRO = re.compile(r"classic\s+mistakes\s+of\s+this\s+chapter:[ \t]*$", re.MULTILINE)
MAPPING = "% - "  # a comment line that maps a bullet: "% - id id ..."
MAPPING_LINE = re.compile(r"^%[ \t]+-(?:[ \t]+(.*))?$")


# Chapter 4's mistakes are planted in the tests of the grading command itself, which grade
# that chapter's class once for many purposes; every other chapter's in its own grading test.
MISTAKES_ELSEWHERE = {"04-attention": "test_autograder_grade"}


def grading_module(chapter: str) -> str:
    return MISTAKES_ELSEWHERE.get(chapter, "test_grading_" + chapter.replace("-", "_"))


def planted_mistakes_listed(page: str, name: str = "the page", planted_in: str | None = None
                            ) -> list[tuple[str, list[str]]]:
    """(bullet, the MISTAKES ids its comment line names) for each bullet of the classic-mistakes list.

    Raises AssertionError, naming ``name``, when the list or its comment block is missing,
    when the block has not one ``% - id id ...`` line per bullet, or when its first line does
    not name ``planted_in`` (the grading test's path), if given.
    """
    intro = INTRO.search(page)
    assert intro, f"{name}: no sentence ending in 'the classic mistakes of this chapter:'"
    lines = page[intro.end():].split("\n")[1:]
    index = 0
    while index < len(lines) and not lines[index].strip():
        index += 1
    bullets: list[str] = []
    while index < len(lines) and lines[index].strip():
        line = lines[index]
        if line.startswith("- "):
            bullets.append(line[2:].strip())
        elif bullets and line.startswith(" "):
            bullets[-1] += " " + line.strip()
        else:
            raise AssertionError(f"{name}: line {line!r} in the classic-mistakes list is neither a bullet "
                                 "nor an indented continuation of one")
        index += 1
    assert bullets, f"{name}: no bulleted list after 'the classic mistakes of this chapter:'"
    while index < len(lines) and not lines[index].strip():
        index += 1
    comments = []
    while index < len(lines) and lines[index].startswith("%"):
        comments.append(lines[index])
        index += 1
    assert comments, (
        f"{name}: the classic-mistakes list is not followed by its comment block: after the last bullet "
        f"and a blank line, add '% The mistakes above, bullet by bullet, as planted in tests/test_grading_....py:' "
        f"and one line '{MAPPING}ID ID ...' per bullet naming the MISTAKES ids that plant it")
    if planted_in is not None:
        assert planted_in in comments[0], f"{name}: the comment block's first line should name {planted_in}"
    rows = [(match[1] or "").split() for match in map(MAPPING_LINE.match, comments) if match]
    assert len(rows) == len(bullets), (
        f"{name}: the comment block after the classic-mistakes list has {len(rows)} '{MAPPING}' lines "
        f"for {len(bullets)} bullets: one line per bullet, in the bullets' order")
    for bullet, ids in zip(bullets, rows):
        assert ids, f"{name}: the comment line for the bullet {bullet[:60]!r} names no planted mistake"
    return list(zip(bullets, rows))


def chapter_mistakes(chapter: str) -> tuple[str, dict]:
    """The chapter's grading-test class name and its MISTAKES table (imported, not collected here)."""
    module = importlib.import_module(grading_module(chapter))
    if chapter in MISTAKES_ELSEWHERE:
        # Chapter 4's training part plants its mistakes in the chapter's own grading test as well.
        _, own = chapter_class_mistakes("test_grading_" + chapter.replace("-", "_"))
        return module.__name__, {**module.MISTAKES, **own}
    return chapter_class_mistakes(module.__name__)


def chapter_class_mistakes(module_name: str) -> tuple[str, dict]:
    """The one ChapterGrading class of a grading test module: its name and its MISTAKES."""
    module = importlib.import_module(module_name)
    classes = [value for value in vars(module).values()
               if isinstance(value, type) and issubclass(value, ChapterGrading) and value is not ChapterGrading]
    assert len(classes) == 1, f"{module.__name__}: expected one ChapterGrading class, found {classes}"
    return classes[0].__name__, classes[0].MISTAKES


def test_every_exercise_has_a_page_and_every_page_an_exercise():
    pages = sorted(path.parent.name for path in (REPO / "book").glob("*/exercises.md"))
    assert pages == sorted(CHAPTERS)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_mistake_the_page_lists_is_planted_and_every_planted_one_is_listed(chapter):
    page = REPO / "book" / chapter / "exercises.md"
    name = page.relative_to(REPO).as_posix()
    test_file = f"tests/{grading_module(chapter)}.py"
    listed = planted_mistakes_listed(page.read_text(encoding="utf-8"), name, planted_in=test_file)
    owner, mistakes = chapter_mistakes(chapter)
    table = f"{test_file} ({owner}.MISTAKES)"
    named = {student for _, ids in listed for student in ids}
    unknown = sorted(named - set(mistakes))
    assert not unknown, f"{name} names mistakes that are not planted in {table}: {', '.join(unknown)}"
    missing = sorted(set(mistakes) - named)
    assert not missing, (f"{name} does not list these mistakes planted in {table} (describe them in a bullet "
                         f"and name them on its comment line): {', '.join(missing)}")


SYNTHETIC = """# Exercises

The hidden tests are written to catch the classic mistakes of this chapter:

- a step without tanh, or without the hidden bias;
- clipping without the square root, or that scales small
  gradients up.
"""


def test_a_list_without_its_comment_block_fails_with_a_clear_message():
    with pytest.raises(AssertionError, match=r"synthetic\.md: the classic-mistakes list is not followed by its comment block"):
        planted_mistakes_listed(SYNTHETIC + "\nEach part is graded on its own.\n", "synthetic.md")


def test_a_comment_block_with_a_line_missing_fails_with_a_clear_message():
    page = SYNTHETIC + "\n% The mistakes above, bullet by bullet, as planted in tests/test_grading_02_rnns.py:\n% - step-relu\n"
    with pytest.raises(AssertionError, match=r"synthetic\.md: .* has 1 '% - ' lines for 2 bullets"):
        planted_mistakes_listed(page, "synthetic.md")


def test_a_complete_comment_block_maps_each_bullet_to_its_ids():
    page = SYNTHETIC + ("\n% The mistakes above, bullet by bullet, as planted in tests/test_grading_02_rnns.py:\n"
                        "% - step-without-tanh step-drops-hidden-bias\n% - clip-without-sqrt clip-scales-up\n\nMore.\n")
    listed = planted_mistakes_listed(page, "synthetic.md")
    assert [ids for _, ids in listed] == [["step-without-tanh", "step-drops-hidden-bias"],
                                          ["clip-without-sqrt", "clip-scales-up"]]
    assert listed[1][0] == "clipping without the square root, or that scales small gradients up."
