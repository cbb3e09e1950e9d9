import gc
import weakref

import pytest

from kapla.scheduling.collector import SEARCH_FULL_EVERY, paused, rare_full_collections


class _Node:
    def __init__(self) -> None:
        self.me = self  # a cycle: only the collector frees it


def test_a_cycle_made_while_paused_is_collected_after_it():
    assert gc.isenabled()
    with paused():
        assert not gc.isenabled()
        ref = weakref.ref(_Node())
        assert ref() is not None  # nothing collected it while paused
    assert gc.isenabled()
    assert ref() is None


def test_a_collector_turned_off_by_the_caller_stays_off():
    gc.disable()
    try:
        with paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_the_collector_comes_back_when_the_block_raises():
    with pytest.raises(ValueError), paused():
        raise ValueError("a solve failed")
    assert gc.isenabled()


def test_full_collections_are_rarer_only_inside_the_block():
    before = gc.get_threshold()
    with pytest.raises(ValueError), rare_full_collections():
        assert gc.get_threshold() == (before[0], before[1], max(before[2], SEARCH_FULL_EVERY))
        raise ValueError("a search failed")
    assert gc.get_threshold() == before
