"""A tiny language model and its batches, for the tests of the training loop and of the recipe."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def tiny_lm(seed=0):
    """A language model small enough to train for a dozen steps in a test: embedding, LayerNorm, output."""
    torch.manual_seed(seed)
    return nn.Sequential(nn.Embedding(7, 8), nn.LayerNorm(8), nn.Linear(8, 7))


def lm_batches(seed=0):
    """Five batches of 4 random sequences of 6 ids below 7."""
    generator = torch.Generator().manual_seed(seed)
    return [torch.randint(0, 7, (4, 6), generator=generator) for _ in range(5)]


def lm_loss(model, ids):
    """Next-id cross-entropy."""
    return F.cross_entropy(model(ids[:, :-1]).flatten(0, 1), ids[:, 1:].flatten())
