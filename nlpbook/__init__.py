"""The course package of the NLP book.

Chapters import it under this one name (``import nlpbook``).  It holds what
every chapter shares: device choice, seeding, the run profile, plotting,
timing, synthetic data and a small training loop.  It never holds the
solution of an exercise.
"""
from nlpbook.device import get_device
from nlpbook.seed import seed_everything
from nlpbook.profile import PROFILES, current_profile, choose
from nlpbook.claims import claim, choose_words, counted
from nlpbook.timing import time_call
from nlpbook.notebook import add_to_class
from nlpbook.train import History, train

__all__ = [
    "PROFILES",
    "add_to_class",
    "History",
    "choose",
    "choose_words",
    "claim",
    "counted",
    "current_profile",
    "get_device",
    "seed_everything",
    "time_call",
    "train",
]
