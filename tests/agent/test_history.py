"""History windows, with best:K checked against hand-computed sums."""

import pytest

from tritongym.agent.history import Exchange, History, best_window_start
from tritongym.errors import ConfigError


def exchanges(rewards):
    return [Exchange({"role": "assistant", "content": str(i)}, {"role": "user", "content": "fb"}, r, i)
            for i, r in enumerate(rewards)]  # fmt: skip


def test_best_window_hand_computed():
    # windows of 2: (0.1+0.9)=1.0, (0.9+0.0)=0.9, (0.0+0.5)=0.5, (0.5+0.6)=1.1 -> start 3
    assert best_window_start([0.1, 0.9, 0.0, 0.5, 0.6], 2) == 3
    # windows of 3: 1.0, 1.4, 1.1 -> start 1
    assert best_window_start([0.1, 0.9, 0.0, 0.5, 0.6], 3) == 1


def test_best_window_ties_go_to_the_latest_and_none_counts_zero():
    assert best_window_start([1.0, 0.0, 1.0, 0.0], 1) == 2
    assert best_window_start([None, 0.5, None, None], 2) == 1
    assert best_window_start([0.3], 4) == 0


def test_windows_of_each_mode():
    items = exchanges([0.1, 0.9, 0.0, 0.5, 0.6])
    assert [e.turn for e in History.parse("all").window(items)] == [0, 1, 2, 3, 4]
    assert [e.turn for e in History.parse("last:2").window(items)] == [3, 4]
    assert [e.turn for e in History.parse("best:3").window(items)] == [1, 2, 3]
    assert [e.turn for e in History.parse("best:9").window(items)] == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("spec", ["some", "last", "best:0", "last:x", "all:2"])
def test_bad_history_specs(spec):
    with pytest.raises(ConfigError, match="history must be"):
        History.parse(spec)


def test_round_trip():
    assert str(History.parse("best:4")) == "best:4" and str(History.parse("all")) == "all"
