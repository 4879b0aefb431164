import pytest
import torch

from nlpbook.device import cpu_threads, describe, get_device


def test_cuda_when_present_else_cpu(monkeypatch):
    monkeypatch.delenv("NLPBOOK_DEVICE", raising=False)
    assert get_device().type == ("cuda" if torch.cuda.is_available() else "cpu")


def test_environment_and_argument_force_a_device(monkeypatch):
    monkeypatch.setenv("NLPBOOK_DEVICE", "cpu")
    assert get_device() == torch.device("cpu")
    assert get_device("cpu") == torch.device("cpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="only meaningful without a GPU")
def test_asking_for_a_missing_gpu_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("NLPBOOK_DEVICE", raising=False)
    with pytest.raises(RuntimeError, match="sees no CUDA device"):
        get_device("cuda")


def test_cpu_threads_sets_the_pool_for_the_block_and_restores_it_even_on_error():
    before = torch.get_num_threads()
    with cpu_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with pytest.raises(KeyError):
        with cpu_threads(1):
            raise KeyError("inside")
    assert torch.get_num_threads() == before
    with pytest.raises(ValueError, match="at least 1"):
        with cpu_threads(0):
            pass


def test_describe_names_the_cpu_threads_in_the_right_number():
    with cpu_threads(1):
        assert describe(torch.device("cpu")) == "1 CPU thread"
    with cpu_threads(2):
        assert describe(torch.device("cpu")) == "2 CPU threads"
    assert describe(torch.device("meta")) == "the meta device"
