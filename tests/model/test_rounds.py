"""The round model of atomic schedules: a hand-checked example, and on random
small DAGs of atoms: every valid schedule passes the check, every broken one
is caught, and the figures keep their bounds."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kapla.model.rounds import Atom, Chip, Round, check, evaluate

CHIP = Chip(mesh=(2, 2), buffer_words=100, link_words=4, dram_words=8, dram_j=10.0, hop_j=1.0, static_j=0.5,
            pes=16)


def test_a_hand_checked_schedule():
    a = Atom("a", "L1", cycles=10, energy_j=1.0, macs=160, out_words=16, weight_words=8, inputs=((None, 24),),
             work_words=48)
    b = Atom("b", "L2", cycles=20, energy_j=2.0, macs=320, out_words=8, weight_words=0, inputs=(("a", 16),),
             work_words=24)
    c = Atom("c", "L2", cycles=5, energy_j=0.5, macs=80, out_words=4, inputs=(("a", 16),), work_words=20)
    rounds = [Round((("a", 0),)), Round((("b", 3), ("c", 0)))]
    t = evaluate([a, b, c], rounds, CHIP)
    assert t.valid
    # round 0: DRAM reads 8 weights + 24 inputs = 32 words, 4 cycles; then 10 of compute; a's output is kept
    # round 1: b on engine 3 reads a's 16 words over 2 hops: 2 + 16/4 = 6 cycles, then 20; c reads locally
    #          b's and c's outputs, read by nobody, go to DRAM after the round: 12 words, 2 cycles
    assert [r.cycles for r in t.rounds] == [4 + 10, 6 + 20 + 2]
    assert [r.compute for r in t.rounds] == [10, 20]
    assert t.rounds[1].noc_word_hops == 32 and t.rounds[1].noc_words == 16 and t.rounds[1].dram_written == 12
    assert t.energy == {"engines": 3.5, "NoC": 32.0, "DRAM": (32 + 12) * 10.0, "static": 42 * 0.5}
    assert t.reuse_ratio == pytest.approx(32 / (24 + 32))
    assert t.utilisation == pytest.approx(560 / (64 * 30))
    assert t.noc_overhead == pytest.approx(12 / 42)


def test_a_written_back_output_is_read_from_dram():
    a = Atom("a", "L1", 10, 1.0, 10, out_words=16)
    b = Atom("b", "L2", 10, 1.0, 10, out_words=4, inputs=(("a", 16),))
    kept = evaluate([a, b], [Round((("a", 0),)), Round((("b", 1),))], CHIP)
    evicted = evaluate([a, b], [Round((("a", 0),), evict=("a",)), Round((("b", 1),))], CHIP)
    assert kept.valid and evicted.valid
    assert evicted.rounds[1].dram_read == 16 and kept.rounds[1].dram_read == 0
    assert evicted.rounds[0].dram_written == 16 and evicted.reuse_ratio == 0 and kept.reuse_ratio == 1


def test_weights_are_kept_only_from_the_round_before_on_the_same_engine():
    atoms = [Atom(f"w{i}", "L", 10, 1.0, 10, out_words=1, weight_words=40, weight_block="L:0") for i in range(3)]
    again = evaluate(atoms, [Round((("w0", 0),)), Round((("w1", 0),)), Round((("w2", 1),))], CHIP)
    assert [r.dram_read for r in again.rounds] == [40, 0, 40]  # same engine next round: kept; another: fetched
    idle = evaluate(atoms, [Round((("w0", 0),)), Round((("w1", 1),)), Round((("w2", 0),))], CHIP)
    assert [r.dram_read for r in idle.rounds] == [40, 40, 40]  # a round in between: fetched again


@pytest.mark.parametrize("rounds, message", [
    ([Round((("b", 0),)), Round((("a", 1),))], "round 0: atom b runs before a, which it reads"),
    ([Round((("a", 0), ("b", 0)))], "round 0: an engine runs two atoms"),
    ([Round((("a", 0),)), Round((("b", 1), ("a", 2)))], "atom a runs twice"),
    ([Round((("a", 0),))], "1 atoms never run (b)"),
    ([Round((("a", 9),)), Round((("b", 1),))], "atom a on engine 9, the chip has 4"),
    ([Round((("a", 0),), evict=("b",)), Round((("b", 1),))], "round 0: b written back before it ran"),
])
def test_broken_schedules_are_caught(rounds, message):
    a = Atom("a", "L1", 10, 1.0, 10, out_words=16)
    b = Atom("b", "L2", 10, 1.0, 10, out_words=4, inputs=(("a", 16),))
    problems = check([a, b], rounds, CHIP)
    assert any(message in p for p in problems), problems
    assert not evaluate([a, b], rounds, CHIP).valid


def test_a_buffer_over_capacity_is_caught():
    a = Atom("a", "L1", 10, 1.0, 10, out_words=60)
    b = Atom("b", "L1", 10, 1.0, 10, out_words=50)
    c = Atom("c", "L2", 10, 1.0, 10, out_words=4, inputs=(("a", 60), ("b", 50)))
    over = [Round((("a", 0),)), Round((("b", 0),)), Round((("c", 1),))]
    assert any("engine 0's buffer holds 110 words" in p for p in check([a, b, c], over, CHIP))
    # written back after its round, a no longer takes room
    assert check([a, b, c], [Round((("a", 0),), evict=("a",)), Round((("b", 0),)), Round((("c", 1),))], CHIP) == ()
    assert check([a, b, c], [Round((("a", 0),)), Round((("b", 1),)), Round((("c", 2),))], CHIP) == ()


@st.composite
def dags(draw):
    """Random small DAGs of atoms and a random valid schedule of them on CHIP."""
    n = draw(st.integers(1, 12))
    atoms = []
    for i in range(n):
        parents = draw(st.lists(st.integers(0, i - 1), max_size=3, unique=True)) if i else []
        inputs = tuple((f"x{p}", draw(st.integers(1, 10))) for p in parents)
        if draw(st.booleans()):
            inputs += ((None, draw(st.integers(1, 10))),)
        atoms.append(Atom(f"x{i}", f"L{i % 3}", draw(st.integers(1, 50)), draw(st.floats(0, 5)),
                          draw(st.integers(0, 100)), out_words=draw(st.integers(1, 10)),
                          weight_words=draw(st.integers(0, 10)), inputs=inputs, work_words=draw(st.integers(0, 20))))
    # rounds: a topological order cut into groups of at most 4, each atom on a distinct engine
    done: set[str] = set()
    left = list(atoms)
    rounds = []
    while left:
        ready = [a for a in left if set(a.reads) <= done]
        take = ready[:draw(st.integers(1, min(4, len(ready))))]
        engines = draw(st.permutations(range(4)))[:len(take)]
        evict = tuple(a.name for a in take if draw(st.booleans()))
        rounds.append(Round(tuple((a.name, e) for a, e in zip(take, engines, strict=True)), evict))
        done |= {a.name for a in take}
        left = [a for a in left if a.name not in done]
    return atoms, rounds


BIG = Chip(mesh=(2, 2), buffer_words=10_000, link_words=2, dram_words=4, dram_j=3.0, hop_j=1.0, static_j=0.1, pes=8)


@settings(max_examples=60, deadline=None)
@given(dags())
def test_every_valid_schedule_passes_and_keeps_its_bounds(case):
    atoms, rounds = case
    t = evaluate(atoms, rounds, BIG)
    assert t.valid, t.violations
    assert len(t.rounds) == len(rounds)
    for cost, rnd in zip(t.rounds, rounds, strict=True):
        assert cost.cycles >= cost.compute == max(next(a.cycles for a in atoms if a.name == n) for n, _ in rnd.runs)
    assert 0 <= t.reuse_ratio <= 1 and 0 <= t.noc_overhead < 1 and 0 <= t.utilisation
    assert t.energy["engines"] == pytest.approx(sum(a.energy_j for a in atoms))
    assert t.energy["static"] == pytest.approx(t.cycles * BIG.static_j)
    # every word read comes from a buffer or from DRAM; weights from DRAM
    dram = sum(r.dram_read for r in t.rounds)
    assert dram + t.on_chip_reads == t.input_reads + sum(a.weight_words for a in atoms)
    # every output nobody reads goes to DRAM once
    readers = {p for a in atoms for p in a.reads}
    unread = sum(a.out_words for a in atoms if a.name not in readers)
    assert sum(r.dram_written for r in t.rounds) >= unread
    assert math.isfinite(t.energy_j)


@settings(max_examples=60, deadline=None)
@given(dags(), st.data())
def test_moving_an_atom_before_what_it_reads_is_caught(case, data):
    atoms, rounds = case
    dependent = [a for a in atoms if a.reads]
    if not dependent:
        return
    atom = data.draw(st.sampled_from(dependent))
    producer = atom.reads[0]
    at = next(r for r, rnd in enumerate(rounds) if any(n == producer for n, _ in rnd.runs))
    # run it in its producer's round instead, on an engine nobody uses then (or a new round before it)
    moved = [Round(tuple(x for x in rnd.runs if x[0] != atom.name), rnd.evict) for rnd in rounds]
    used = {e for _, e in moved[at].runs}
    free = [e for e in range(4) if e not in used]
    if free:
        moved[at] = Round(moved[at].runs + ((atom.name, free[0]),), moved[at].evict)
    else:
        moved.insert(at, Round(((atom.name, 0),)))
    moved = [rnd for rnd in moved if rnd.runs]
    problems = check(atoms, moved, BIG)
    assert any(f"atom {atom.name} runs before" in p for p in problems), problems
