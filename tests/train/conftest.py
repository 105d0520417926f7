import pytest
import torch


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny models run fastest on one thread; on a loaded CPU, a thread pool per caller thread
    (the episode runner generates in a worker thread) spins and slows everything tenfold."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
