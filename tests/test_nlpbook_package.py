"""``import nlpbook`` itself: its shared names load when first used, and only then."""
import subprocess
import sys

import pytest

import nlpbook


def imports_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    shown = subprocess.run([sys.executable, "-c", f"{code}\nimport sys; print(' '.join(sys.modules))"],
                           capture_output=True, text=True, check=True).stdout
    return set(shown.split())


def test_importing_the_package_or_its_records_loads_no_torch():
    assert "torch" not in imports_after("import nlpbook")
    assert "torch" not in imports_after("import nlpbook.running_times")
    assert "torch" in imports_after("import nlpbook\nnlpbook.seed_everything(0)")


@pytest.mark.parametrize("name", nlpbook.__all__)
def test_every_shared_name_is_the_one_its_module_defines(name):
    value = getattr(nlpbook, name)
    if name != "use_book_style":
        module = sys.modules[nlpbook._HOME[name]]
        assert value is getattr(module, name)
    assert name in dir(nlpbook)


def test_train_is_the_loop_even_when_its_module_is_imported_first():
    # The module is nlpbook.training, so importing it cannot put a module where the function is.
    code = ("from nlpbook.training import StepWatch\nimport nlpbook\n"
            "print(type(nlpbook.train).__name__, type(nlpbook.training).__name__)")
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert shown.split() == ["function", "module"]


def test_the_modules_of_the_package_are_reached_as_attributes():
    code = "import nlpbook\nprint(nlpbook.device.describe.__module__)"
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert shown.strip() == "nlpbook.device"


def test_a_name_the_package_does_not_have_is_an_attribute_error():
    with pytest.raises(AttributeError, match="'nlpbook' has no attribute 'trian'"):
        nlpbook.trian
    assert not hasattr(nlpbook, "__wrapped__")
