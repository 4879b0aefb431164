"""The course package of the NLP book.

Chapters import it under this one name (``import nlpbook``).  It holds what
every chapter shares: device choice, seeding, the run profile, plotting,
timing, synthetic data, a small training loop and the recipe it trains
language models with.  It never holds the solution of an exercise.
"""
from nlpbook.device import get_device
from nlpbook.seed import seed_everything
from nlpbook.profile import PROFILES, current_profile, choose
from nlpbook.claims import agreement, claim, choose_words, counted, listed
from nlpbook.timing import duration, time_call
from nlpbook.notebook import add_to_class
from nlpbook.recipe import Recipe
from nlpbook.train import History, train


def use_book_style() -> None:
    """Draw this notebook's figures in the book's style (``nlpbook.plot.BOOK_STYLE``).

    Pages call it after their imports; it is not done on ``import nlpbook`` because code that
    draws nothing (the graders, the exercises' tests) should not load matplotlib.
    """
    import matplotlib

    from nlpbook.plot import BOOK_STYLE

    matplotlib.rcParams.update(BOOK_STYLE)


__all__ = [
    "PROFILES",
    "Recipe",
    "add_to_class",
    "agreement",
    "History",
    "choose",
    "choose_words",
    "claim",
    "counted",
    "listed",
    "current_profile",
    "duration",
    "get_device",
    "seed_everything",
    "time_call",
    "train",
    "use_book_style",
]
