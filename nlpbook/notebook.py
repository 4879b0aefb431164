"""Helpers for writing a class across several notebook cells."""
from __future__ import annotations

from typing import Callable


def add_to_class(cls: type) -> Callable:
    """Decorator: attach the decorated function to ``cls`` as a method of the same name, so that a
    later cell can write one method of a class that an earlier cell defined (as d2l does)::

        @add_to_class(BertLayer)
        def forward(self, hidden_states, attention_mask): ...

    Instances made before the decorator runs see the new method too.
    """
    def attach(function: Callable) -> Callable:
        setattr(cls, function.__name__, function)
        return function
    return attach
