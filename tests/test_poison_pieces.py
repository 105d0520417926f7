"""Poisoning free GPU memory refills each free block of the caching allocator from its own pool: a
block of the small pool (requests up to 1 MiB) only by requests of at most 1 MiB (guards._pieces)."""

from tritongym.evaluate.guards import SMALL_ALLOCATION, _pieces

MIB = 1 << 20


def test_a_large_pool_block_is_taken_back_whole():
    assert _pieces(3 * MIB + 512, small=False) == [3 * MIB + 512]


def test_a_small_pool_block_is_taken_back_in_requests_the_small_pool_serves():
    assert _pieces(2 * MIB, small=True) == [MIB, MIB]
    assert _pieces(MIB + 1536, small=True) == [MIB, 1536]
    assert _pieces(512, small=True) == [512]
    assert all(0 < piece <= SMALL_ALLOCATION for piece in _pieces(2 * MIB - 512, small=True))
    assert sum(_pieces(2 * MIB - 512, small=True)) == 2 * MIB - 512
