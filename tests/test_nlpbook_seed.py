import random

import numpy as np
import pytest
import torch

from nlpbook.seed import seed_everything


def _draw(generator):
    return random.random(), float(np.random.rand()), torch.rand(3).tolist(), torch.rand(2, generator=generator).tolist()


def test_same_seed_same_numbers_everywhere():
    assert _draw(seed_everything(7)) == _draw(seed_everything(7))


def test_different_seeds_differ():
    assert _draw(seed_everything(1)) != _draw(seed_everything(2))


@pytest.mark.parametrize("seed", [-1, 1.5, "0"])
def test_bad_seed_is_rejected(seed):
    with pytest.raises(ValueError, match="non-negative integer"):
        seed_everything(seed)
