"""The kernel zygote: it starts quietly, and one that cannot start says why."""
from __future__ import annotations

import sys

import pytest

from autograder import sandbox
from autograder.zygote import Zygote


def test_a_zygote_keeps_its_own_output_off_the_instructors_terminal(capfd):
    zygote = Zygote(sandbox.kernel_environment())
    try:
        zygote.start().wait()
        assert zygote.alive()
    finally:
        zygote.close()
    # ipykernel's debugger notes ("Debugger warning: It seems that frozen modules are being used")
    # went to the terminal of every grading run before.
    assert capfd.readouterr().err == ""


def test_a_zygote_that_cannot_start_quotes_what_it_said(monkeypatch):
    # A zygote that fails as it imports (a broken installation): its last words are in the error.
    broken = "import sys; sys.stderr.write('ImportError: a broken grader'); sys.exit(1)"
    monkeypatch.setattr(sandbox, "python_command", lambda module, *args: [sys.executable, "-c", broken])
    zygote = Zygote(sandbox.kernel_environment())
    try:
        said = r"did not start \(exit status 1\); it said: ImportError: a broken grader"
        with pytest.raises(RuntimeError, match=said):
            zygote.start().wait()
    finally:
        zygote.close()


def test_the_zygote_preloads_every_module_behind_nlpbooks_shared_names():
    # nlpbook loads its shared names when first used: a module missing from PRELOAD would not fail any
    # grading, only make every kernel import it again after the fork.
    import nlpbook
    from autograder.zygote import PRELOAD

    missing = sorted(set(nlpbook._HOME.values()) - set(PRELOAD))
    assert not missing, f"add {missing} to autograder.zygote.PRELOAD"
