"""The course package of the NLP book.

Chapters import it under this one name (``import nlpbook``).  It holds what
every chapter shares: device choice, seeding, the run profile, plotting,
timing, synthetic data, a small training loop and the recipe it trains
language models with.  It never holds the solution of an exercise.

The names below are loaded when first used, not on ``import nlpbook``: most of
them need PyTorch (two seconds to import), and a page that only reads the
book's records (the chapters' opening pages, the preface) or a grader that
draws nothing should not pay for it.
"""
import importlib

# Each shared name and the module that defines it.
_HOME = {
    "get_device": "nlpbook.device",
    "seed_everything": "nlpbook.seed",
    "PROFILES": "nlpbook.profile",
    "current_profile": "nlpbook.profile",
    "choose": "nlpbook.profile",
    "agreement": "nlpbook.claims",
    "claim": "nlpbook.claims",
    "choose_words": "nlpbook.claims",
    "counted": "nlpbook.claims",
    "listed": "nlpbook.claims",
    "duration": "nlpbook.timing",
    "time_call": "nlpbook.timing",
    "add_to_class": "nlpbook.notebook",
    "Recipe": "nlpbook.recipe",
    "History": "nlpbook.training",
    "train": "nlpbook.training",
}


def __getattr__(name: str):
    if name in _HOME:
        value = getattr(importlib.import_module(_HOME[name]), name)
        globals()[name] = value  # looked up once; later uses find it here
        return value
    # A module of the package (``nlpbook.device.describe`` after a bare ``import nlpbook``), as
    # when this file imported them all.
    try:
        return importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as error:
        if error.name != f"{__name__}.{name}":
            raise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOME))


def use_book_style() -> None:
    """Draw this notebook's figures in the book's style (``nlpbook.plot.BOOK_STYLE``).

    Pages call it after their imports; it is not done on ``import nlpbook`` because code that
    draws nothing (the graders, the exercises' tests) should not load matplotlib.
    """
    import matplotlib

    from nlpbook.plot import BOOK_STYLE

    matplotlib.rcParams.update(BOOK_STYLE)


__all__ = sorted([*_HOME, "use_book_style"])
