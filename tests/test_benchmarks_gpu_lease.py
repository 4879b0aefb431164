"""benchmarks/gpu_lease.sh: everything the pages and solution notebooks import reaches the lent GPU machine.

The lent machine has PyTorch, NumPy, matplotlib and ``transformers`` and cannot install; the lease
carries wheels for the rest.  A package missing there costs a page or a notebook of a scarce lease
(a rehearsal in a bare environment found sacrebleu, num2words and gensim's wrapt missing), so these
tests read what is imported and what is carried, here, without a GPU."""
from __future__ import annotations

import ast
import importlib.metadata
import re
import sys

import jupytext
import nbformat
from packaging.requirements import Requirement

from conftest import REPO

LEASE = (REPO / "benchmarks" / "gpu_lease.sh").read_text()

# On the lent machine without being given: PyTorch, NumPy, matplotlib, transformers, pytest and what
# they depend on (PyYAML is one of transformers' requirements).  scipy is assumed there: the November
# run of every solution notebook on a lent H100 passed chapter 1's, which imports it through
# nlpbook.similarity.
LENT_MACHINE_HAS = {"torch", "numpy", "matplotlib", "transformers", "tokenizers", "safetensors", "tqdm",
                    "regex", "packaging", "python-dateutil", "typing-extensions", "pytest", "scipy", "pyyaml"}
# What full_profile.py stands in for, and what only runs here, never there.
STOOD_IN = {"myst-nb": "full_profile.py records glue() instead"}
STAYS_HERE = {"jupytext": "nlpbook.recorded reads the pages' sources here",
              "pyarrow": "GloVe's word index: the GloVe pages cannot run there (76 MiB of vectors)",
              "nlpbook": "the repository itself travels", "autograder": "the repository itself travels"}
# Requirements of carried packages that nothing imports on the way the book uses them.
UNUSED = {"docopt": "num2words' command line only"}
# The lent machine: Python 3.12 on x86-64 Linux.
THERE = dict(python_version="3.12", python_full_version="3.12.3", sys_platform="linux",
             platform_system="Linux", platform_machine="x86_64", implementation_name="cpython",
             platform_python_implementation="CPython", os_name="posix", extra="")


def normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def carried() -> set[str]:
    """Every distribution the lease script downloads: the pinned names and the CARRIED list.  The
    rehearsal pins torch for its own environment; the lent machine has torch and what it needs."""
    pinned = re.findall(r"\b([A-Za-z][A-Za-z0-9_.-]*)==[0-9]", LEASE)
    listed = re.search(r'^CARRIED="([^"]+)"', LEASE, re.MULTILINE).group(1).split("|")
    return {normal(name) for name in pinned + listed} - LENT_MACHINE_HAS


def imported_modules(sources) -> set[str]:
    """Top-level modules imported anywhere in ``sources`` (Python code), outside the standard library."""
    found = set()
    for source in sources:
        code = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!")))
        for node in ast.walk(ast.parse(code)):
            if isinstance(node, ast.Import):
                found |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                found.add(node.module.split(".")[0])
    return {name for name in found if name not in sys.stdlib_module_names}


def lease_sources():
    """The code of nlpbook, of every page the lease runs (those that train, as its prepare step
    chooses them) and of every solution notebook."""
    for path in sorted((REPO / "nlpbook").glob("*.py")):
        yield path.read_text()
    for path in sorted((REPO / "book").glob("*/*.md")):
        text = path.read_text()
        if re.search(r"choose\(|seconds=", text):
            yield from (cell.source for cell in jupytext.reads(text, fmt="md:myst").cells
                        if cell.cell_type == "code")
    for path in sorted((REPO / "solutions").glob("*/*.ipynb")):
        yield from (cell.source for cell in nbformat.read(path, as_version=4).cells if cell.cell_type == "code")


def distribution(module: str) -> str:
    names = importlib.metadata.packages_distributions().get(module, [module])
    return normal(names[0])


def test_every_package_the_lease_runs_import_is_on_the_lent_machine_or_carried_there():
    known = LENT_MACHINE_HAS | carried() | set(STOOD_IN) | set(STAYS_HERE)
    missing = sorted({distribution(module) for module in imported_modules(lease_sources())} - known)
    assert not missing, f"imported by nlpbook, a page or a solution, and neither on the lent machine " \
                        f"nor in benchmarks/gpu_lease.sh's CARRIED: {missing}"


def test_what_each_carried_package_requires_is_on_the_lent_machine_or_carried_too():
    everything = carried()
    missing = []
    for name in sorted(everything):
        for line in importlib.metadata.requires(name) or []:
            requirement = Requirement(line)
            if requirement.marker and not requirement.marker.evaluate(THERE):
                continue
            needed = normal(requirement.name)
            if needed not in everything | LENT_MACHINE_HAS | set(UNUSED):
                missing.append(f"{name} needs {needed}")
    assert not missing, "add to CARRIED in benchmarks/gpu_lease.sh: " + "; ".join(missing)


def test_the_carried_packages_are_pinned_in_requirements():
    pins = {normal(line.split("==")[0]) for line in (REPO / "requirements.txt").read_text().splitlines()
            if "==" in line and not line.startswith("#")}
    listed = re.search(r'^CARRIED="([^"]+)"', LEASE, re.MULTILINE).group(1).split("|")
    assert {normal(name) for name in listed} <= pins, "gpu_lease.sh downloads CARRIED at requirements.txt's pins"


def test_the_checks_find_what_the_rehearsal_found_missing():
    # Without sacrebleu's and gensim's additions, the two checks above would have failed.
    assert {"sacrebleu", "num2words"} <= {distribution(m) for m in imported_modules(lease_sources())}
    assert "wrapt" in {normal(Requirement(r).name) for r in importlib.metadata.requires("smart-open")}
    assert "lxml" in {normal(Requirement(r).name) for r in importlib.metadata.requires("sacrebleu")}
