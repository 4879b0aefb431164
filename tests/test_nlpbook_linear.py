"""nlpbook.linear.fit_logistic: separable data, the penalty, sparse features."""
import torch

from nlpbook.linear import fit_logistic


def blobs(n=200, seed=0):
    """Two classes apart along the first of five features."""
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % 2
    x = torch.randn(n, 5, generator=g)
    x[:, 0] += 3.0 * (2 * y - 1)
    return x, y


def test_separable_classes_are_learned_and_held_out_points_classified():
    x, y = blobs()
    model = fit_logistic(x, y, penalty=1e-4)
    held_out, truth = blobs(seed=1)
    assert (model.predict(x) == y).float().mean() > 0.97
    assert (model.predict(held_out) == truth).float().mean() > 0.97
    assert model.weight[:, 0].abs().sum() > 3 * model.weight[:, 1:].abs().max()


def test_a_larger_penalty_gives_smaller_weights():
    x, y = blobs()
    assert fit_logistic(x, y, 1.0).weight.norm() < 0.5 * fit_logistic(x, y, 1e-4).weight.norm()


def test_sparse_features_give_the_dense_result():
    x, y = blobs()
    x = (x > 0.5).float()
    dense, sparse = fit_logistic(x, y, 1e-3, seed=3), fit_logistic(x.to_sparse(), y, 1e-3, seed=3)
    assert torch.allclose(dense.weight, sparse.weight, atol=1e-5)
    assert torch.equal(dense.predict(x), sparse.predict(x.to_sparse()))


def test_the_seed_sets_the_fit_and_leaves_the_caller_s_random_stream_alone():
    x, y = blobs()
    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    first = fit_logistic(x, y, 1e-3, seed=7, steps=5)
    assert torch.equal(torch.rand(3), expected)
    assert torch.equal(fit_logistic(x, y, 1e-3, seed=7, steps=5).weight, first.weight)
    assert not torch.equal(fit_logistic(x, y, 1e-3, seed=8, steps=5).weight, first.weight)


def test_the_fit_is_a_stationary_point_of_the_objective_it_names():
    # Cross-entropy (a mean) plus penalty * |W|^2, the bias unpenalized: at the fit, the gradient
    # of exactly that objective vanishes.  Unbalanced classes make the bias matter.
    generator = torch.Generator().manual_seed(0)
    y = (torch.arange(60) % 4 == 0).long()
    x = torch.randn(60, 3, generator=generator)
    x[:, 0] += 0.5 * (2 * y - 1)
    model = fit_logistic(x, y, penalty=0.05, steps=3000, lr=0.01)
    weight, bias = model.weight.clone().requires_grad_(), model.bias.clone().requires_grad_()
    objective = torch.nn.functional.cross_entropy(x @ weight.T + bias, y) + 0.05 * weight.pow(2).sum()
    gradients = torch.autograd.grad(objective, (weight, bias))
    assert all(gradient.abs().max() < 1e-3 for gradient in gradients)
