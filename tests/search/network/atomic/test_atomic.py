"""The atomic scheduler: atoms that fit an engine and read what their window
covers, schedules that pass the round model's check on random small CNNs,
determinism, and one error line for what it cannot schedule."""

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kapla
from kapla.arch import load_arch
from kapla.errors import KaplaError
from kapla.model.rounds import check
from kapla.search.network.atomic.atoms import _count, anneal, atom_words, atoms_of, input_window, reads, tilings
from kapla.search.network.atomic.rounds import snake
from kapla.workload.load import load_network
from kapla.workload.network import NetworkBuilder

EXAMPLES = Path(__file__).resolve().parents[4] / "examples"
ATOMIC = load_arch("atomic")
SMALL = ATOMIC.with_node_block(2, 2)  # 2x2 engines: small searches


def test_snake_order_visits_neighbours():
    order = snake((3, 4))
    assert order == [0, 1, 2, 3, 7, 6, 5, 4, 8, 9, 10, 11]
    chip = kapla.search.network.atomic.scheduler.chip_of(load_arch("atomic"))
    path = snake(chip.mesh)
    assert sorted(path) == list(range(64)) and all(chip.hops(a, b) == 1 for a, b in zip(path, path[1:], strict=False))


def test_atoms_fit_half_an_engine_and_follow_the_engine_dataflow():
    net = load_network("alexnet", batch=1)
    half = ATOMIC.capacity_words("GBUF") // 2
    for layer in net:
        for t in tilings(layer, ATOMIC, "C|K"):
            assert atom_words(layer, t) <= half
            if layer.op.value == "conv" and layer.groups == 1:
                assert t.k % 16 == 0 or t.k == layer.k  # KC-Partition: whole columns of the 16x16 array
    for layer in net:
        for t in tilings(layer, ATOMIC, "Y|X"):
            assert t.rows % 16 == 0 or t.rows == layer.yo  # YX-Partition: whole rows of the array


def test_an_atom_reads_exactly_its_input_window():
    net = load_network(EXAMPLES / "tiny_cnn.yaml", batch=2)
    sizes, _ = anneal(list(net), SMALL, "C|K", seed=1)
    atoms = atoms_of(net, sizes)
    got = reads(net, atoms, sizes)
    by_name = {a.name: a for a in atoms}
    for a in atoms:
        layer = net[a.layer]
        for producer, words in got[a.name]:
            assert words > 0
            if producer is not None:
                assert by_name[producer].sample == a.sample
        if layer.op.value == "conv" and layer.groups == 1 and a.c is None:
            lo, hi = input_window(layer, a.rows)
            assert sum(w for _, w in got[a.name]) == layer.c * (hi - lo) * layer.w
    # every block of every layer is read by someone or is the network's output
    read = {p for r in got.values() for p, _ in r if p is not None}
    last = net.layers[-1].name
    assert all(a.name in read or a.layer == last for a in atoms)


@st.composite
def small_cnns(draw):
    b = NetworkBuilder("rnd", batch=draw(st.integers(1, 2)))
    size = draw(st.sampled_from([8, 12, 16]))
    x = b.input("in", draw(st.integers(1, 8)), height=size, width=size)
    made = [x]
    for i in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(["conv", "conv", "pool", "add", "concat"]))
        src = draw(st.sampled_from(made))
        if kind == "conv":
            made.append(b.conv(f"c{i}", src, draw(st.integers(1, 40)), draw(st.sampled_from([1, 3])),
                               pad=1 if True else 0))
        elif kind == "pool" and b.shape_of(src).h >= 2:
            made.append(b.pool(f"p{i}", src, 2, stride=2))
        elif kind == "add" and len(made) > 1:
            shape = b.shape_of(src)
            same = [m for m in made if m != src and b.shape_of(m) == shape]
            if same:
                made.append(b.eltwise(f"a{i}", [src, same[0]], mode="add"))
        elif kind == "concat" and len(made) > 1:
            shape = b.shape_of(src)
            same = [m for m in made if m != src and b.shape_of(m).h == shape.h and m != x]
            if same and src != x:
                made.append(b.conv(f"k{i}", [src, same[0]], 8, 1))
    if len(made) == 1:
        made.append(b.conv("only", x, 8, 3, pad=1))
    b.fc("fc", made[-1], 10)
    return b.build()


@settings(max_examples=12, deadline=None)
@given(small_cnns())
def test_every_schedule_of_a_random_cnn_passes_the_round_models_check(net):
    result = kapla.schedule(net, SMALL, solver="atomic", jobs=1)
    assert result.valid
    info = result.to_dict()["atomic"]
    assert info["violations"] == [] and info["rounds"] == len(info["timeline"]) > 0
    ran = [a for r in info["timeline"] for a, _ in r["atoms"]]
    assert len(ran) == len(set(ran)) == info["atoms"]  # every atom once
    assert all(0 <= e < 4 for r in info["timeline"] for _, e in r["atoms"])
    assert 0 < info["utilization"] <= 1 and 0 <= info["reuse_ratio"] <= 1
    assert [lr.name for lr in result.layers] == [layer.name for layer in net]
    assert result.energy_j > 0 and result.time > 0


@pytest.mark.parametrize("solver", ["atomic", "il-pipe"])
def test_the_same_inputs_give_the_same_schedule(solver):
    one = kapla.schedule(EXAMPLES / "tiny_cnn.yaml", SMALL, batch=2, solver=solver, jobs=1).to_dict()
    two = kapla.schedule(EXAMPLES / "tiny_cnn.yaml", SMALL, batch=2, solver=solver, jobs=1).to_dict()
    for d in (one, two):
        d.pop("solver_seconds")
    assert one == two


def test_a_broken_schedule_is_caught_by_the_model():
    """The scheduler's own check is the model's: reorder two dependent rounds and it objects."""
    import kapla.search.network.atomic.scheduler as scheduler

    seen = {}
    real = scheduler.evaluate_rounds

    def spy(atoms, rounds, chip):
        seen.update(atoms=atoms, rounds=rounds, chip=chip)
        return real(atoms, rounds, chip)

    scheduler.evaluate_rounds = spy
    try:
        kapla.schedule(EXAMPLES / "tiny_cnn.yaml", SMALL, batch=1, solver="atomic", jobs=1)
    finally:
        scheduler.evaluate_rounds = real
    rounds = list(seen["rounds"])
    assert check(seen["atoms"], rounds, seen["chip"]) == ()
    assert check(seen["atoms"], rounds[::-1], seen["chip"]) != ()


@pytest.mark.parametrize("args, message", [
    (dict(training=True), "schedules inference only"),
])
def test_what_it_cannot_schedule_is_one_error(args, message):
    with pytest.raises(KaplaError, match=message):
        kapla.schedule("mlp_s", SMALL, batch=1, solver="atomic", jobs=1, **args)


def test_the_cli_runs_it_and_writes_its_rounds(tmp_path):
    from click.testing import CliRunner

    from kapla.cli.main import app

    out = tmp_path / "a.json"
    result = CliRunner().invoke(app, ["schedule", str(EXAMPLES / "tiny_cnn.yaml"), "--arch", "atomic", "--batch", "1",
                                      "--solver", "atomic", "--jobs", "1", "--json", str(out)])
    assert result.exit_code == 0, result.output
    import json

    doc = json.loads(out.read_text())
    assert doc["valid"] and doc["scheduler"] == "atomic" and doc["atomic"]["timeline"]
    for key in ("throughput", "utilization", "noc_overhead", "reuse_ratio"):
        assert doc["atomic"][key] >= 0


@settings(max_examples=6, deadline=None)
@given(small_cnns())
def test_the_layer_sequential_baseline_runs_one_layer_at_a_time(net):
    result = kapla.schedule(net, SMALL, solver="layer-sequential", jobs=1)
    assert result.valid and result.scheduler == "layer-sequential"
    timeline = result.to_dict()["atomic"]["timeline"]
    order = {layer.name: i for i, layer in enumerate(net)}
    seen = [max(order[a.split("#")[0]] for a, _ in r["atoms"]) for r in timeline]
    assert all(len({a.split("#")[0] for a, _ in r["atoms"]}) == 1 for r in timeline)  # one layer a round
    assert seen == sorted(seen)  # in the layers' order


def test_cnn_partition_binds_runs_of_layers_to_blocks_of_engines_and_pipelines_samples():
    net = load_network(EXAMPLES / "tiny_cnn.yaml", batch=3)
    result = kapla.schedule(net, SMALL, solver="cnn-partition", solver_options={"clusters": 2}, jobs=1)
    assert result.valid
    info = result.to_dict()["atomic"]
    assert info["clusters"] == 2
    engines: dict[str, set[int]] = {}
    for r in info["timeline"]:
        for atom, engine in r["atoms"]:
            engines.setdefault(atom.split("#")[0], set()).add(engine)
    # a block's layers on its half of the engines (the snake's first or second half), never both
    halves = [{0, 1}, {3, 2}]
    assert all(any(used <= half for half in halves) for used in engines.values())
    assert any(used <= halves[0] for used in engines.values()) and any(used <= halves[1] for used in engines.values())
    # two samples in flight at once: some round runs atoms of two samples
    assert any(len({a.split("#")[1].split(":")[0] for a, _ in r["atoms"]}) > 1 for r in info["timeline"])
    with pytest.raises(KaplaError, match="option 'clusters' must be a whole number of at least 1"):
        kapla.schedule(net, SMALL, solver="cnn-partition", solver_options={"clusters": -1}, jobs=1)


def _checked(net, solver, opts):
    """``solver``'s schedule of ``net`` on the small chip, checked: valid, the round
    model's check passed, every atom run once: the result and its round-model details."""
    result = kapla.schedule(net, SMALL, solver=solver, solver_options=opts, jobs=1)
    assert result.valid and result.scheduler == solver
    info = result.to_dict()["atomic"]
    assert info["violations"] == []
    ran = [a for r in info["timeline"] for a, _ in r["atoms"]]
    assert len(ran) == len(set(ran)) == info["atoms"]
    return result, info


@settings(max_examples=8, deadline=None)
@given(small_cnns(), st.sampled_from([0, 1, 2, 3]), st.integers(1, 4))
def test_il_pipe_pipelines_segments_of_layers_on_blocks_of_engines(net, depth, pieces):
    """IL-Pipe on random small CNNs: valid, every atom once; each layer on one
    block of engines of its own within its segment; no round mixes segments;
    the segments run in order; and where a segment holds a layer and its
    consumer, some round runs both (they are pipelined)."""
    opts = {"pieces": pieces} | ({"depth": depth} if depth else {})
    result, info = _checked(net, "il-pipe", opts)
    d = info["depth"]
    if depth:
        assert d == min(depth, 4)
    names = [layer.name for layer in net]
    segment = {n: i // d for i, n in enumerate(names)}
    engines: dict[str, set[int]] = {}
    last = -1
    together = set()
    for r in info["timeline"]:
        layers = {a.split("#")[0] for a, _ in r["atoms"]}
        segs = {segment[n] for n in layers}
        assert len(segs) == 1 and min(segs) >= last
        last = min(segs)
        together |= {(a, b) for a in layers for b in layers if a != b}
        for atom, engine in r["atoms"]:
            engines.setdefault(atom.split("#")[0], set()).add(engine)
    for a in names:
        for b in names:
            if a != b and segment[a] == segment[b]:
                assert not engines[a] & engines[b]  # blocks of their own
    pipelined = [(e.src, e.dst) for layer in net for e in net.in_edges(layer.name)
                 if e.src in segment and segment[e.src] == segment[e.dst]
                 and sum(lr.cost.time for lr in result.layers if lr.name in (e.src, e.dst)) > 0]
    if pipelined and pieces > 1 and net.batch == 1 and all(net[b].op.value != "fc" for _, b in pipelined):
        # only where some consumer atom can run while its producer still does: its input rows
        # all made before the producer's last round (a halo can reach into it)
        feasible = [(a, b) for a, b in pipelined if _can_overlap(net, info["timeline"], a, b)]
        if feasible:
            assert any((a, b) in together for a, b in feasible)


def _can_overlap(net, timeline, producer: str, consumer: str) -> bool:
    """Whether some atom of ``consumer`` reads only rows that atoms of ``producer``
    make before the producer's last round (atoms named ``layer#sample:k:row...``)."""
    made: dict[int, int] = {}  # the producer's atoms' first rows -> their round
    starts: set[int] = set()
    for n, r in enumerate(timeline):
        for atom, _ in r["atoms"]:
            layer, rest = atom.split("#")
            row = int(rest.split(":")[2])
            if layer == producer:
                made[row] = n
            elif layer == consumer:
                starts.add(row)
    last = max(made.values())
    firsts = sorted(made)
    ends = sorted(starts)
    for i, r0 in enumerate(ends):
        r1 = ends[i + 1] if i + 1 < len(ends) else net[consumer].yo
        lo, hi = input_window(net[consumer], (r0, r1))
        needed = [made[f] for j, f in enumerate(firsts)
                  if f < hi and (firsts[j + 1] if j + 1 < len(firsts) else net[producer].yo) > lo]
        if needed and max(needed) < last:
            return True
    return False


def test_il_pipes_options_are_checked():
    with pytest.raises(KaplaError, match="option 'pieces' must be a whole number of at least 1"):
        kapla.schedule(EXAMPLES / "tiny_cnn.yaml", SMALL, batch=1, solver="il-pipe", solver_options={"pieces": 0})


def test_a_squeeze_excitation_scaling_is_cut_and_reads_its_vector():
    """A channel-wise scaling's atoms read their channels of the fmap and of
    the vector (its own channels, not past the fmap's), and the network
    schedules validly under every round-model scheduler."""
    b = NetworkBuilder("se", batch=1)
    x = b.input("in", 16, height=16, width=16)
    c = b.conv("c", x, 32, 3, pad=1)
    squeeze = b.global_pool("sq", c)
    reduced = b.conv("red", squeeze, 8, 1)
    excite = b.conv("exc", reduced, 32, 1)
    scaled = b.scale("scale", c, excite)
    b.conv("out", scaled, 16, 1)
    net = b.build()
    sizes, _ = anneal(list(net), SMALL, "C|K", seed=0)
    atoms = atoms_of(net, sizes)
    got = reads(net, atoms, sizes)
    by_name = {a.name: a for a in atoms}
    for a in (a for a in atoms if a.layer == "scale"):
        k = a.k[1] - a.k[0]
        vector = sum(w for p, w in got[a.name] if p is not None and by_name[p].layer == "exc")
        fmap = sum(w for p, w in got[a.name] if p is not None and by_name[p].layer == "c")
        assert vector == k
        assert fmap == k * (a.rows[1] - a.rows[0]) * net["scale"].w
    for solver in ("atomic", "layer-sequential", "cnn-partition", "il-pipe"):
        assert kapla.schedule(net, SMALL, solver=solver, jobs=1).valid


@st.composite
def small_decoders(draw):
    from kapla.workload.zoo.transformers import Config, decoder

    kv = draw(st.sampled_from([1, 2]))
    heads = kv * draw(st.sampled_from([1, 2]))
    head_dim = draw(st.sampled_from([16, 32]))
    cfg = Config(hidden=heads * head_dim, heads=heads, kv_heads=kv, ffn=2 * heads * head_dim, layers=1,
                 norm="rmsnorm", act="silu", rotary=True, causal=True)
    batch = draw(st.sampled_from([1, 2]))
    if draw(st.booleans()):
        return decoder("decode", cfg, batch, 1, cache=draw(st.integers(1, 64)))
    return decoder("prefill", cfg, batch, draw(st.integers(1, 48)))


@settings(max_examples=6, deadline=None)
@given(small_decoders())
def test_transformer_blocks_are_cut_and_a_product_of_two_fmaps_reads_its_operand(net):
    """Every atom of Q x K^T or scores x V (not a partial sum) reads, of its
    second operand (the keys or values, with a KV cache stacked before the new
    token's), its heads' share: its output channels times the layer's input
    channels per head; the block schedules validly under the round-model
    schedulers."""
    from kapla.search.network.atomic.atoms import even

    sizes = even(list(net), SMALL, "C|K")
    atoms = atoms_of(net, sizes)
    got = reads(net, atoms, sizes)
    by_name = {a.name: a for a in atoms}
    checked = 0
    for a in atoms:
        layer = net[a.layer]
        if layer.op.value != "matmul" or layer.operand is None or layer.operand.value != "fmap" or a.c is not None:
            continue
        operand = {e.src for e in net.in_edges(layer.name) if e.port == "b"}
        words = sum(w for p, w in got[a.name] if (p is None and operand & set(net.inputs))
                    or (p is not None and by_name[p].layer in operand))
        assert words == (a.k[1] - a.k[0]) * (layer.c // layer.groups)
        checked += 1
    assert checked
    for solver in ("atomic", "il-pipe"):
        result = kapla.schedule(net, SMALL, solver=solver, jobs=1)
        assert result.valid and result.to_dict()["atomic"]["violations"] == []


def test_the_ablations_each_switch_one_stage_off():
    """Without the DP the rounds take the first ready atoms in order; without
    the annealing the atoms are layer-sequential's; without reuse nothing is
    read on chip. Each schedule is valid."""
    net = load_network(EXAMPLES / "tiny_cnn.yaml", batch=2)
    full = kapla.schedule(net, SMALL, solver="atomic", jobs=1).to_dict()["atomic"]
    assert full["reuse_ratio"] > 0
    no_reuse = kapla.schedule(net, SMALL, solver="atomic", solver_options={"reuse": False}, jobs=1)
    assert no_reuse.valid and no_reuse.to_dict()["atomic"]["reuse_ratio"] == 0
    even = kapla.schedule(net, SMALL, solver="atomic", solver_options={"anneal": False}, jobs=1)
    sequential = kapla.schedule(net, SMALL, solver="layer-sequential", jobs=1)
    assert even.valid and even.to_dict()["atomic"]["atoms"] == sequential.to_dict()["atomic"]["atoms"]
    assert kapla.schedule(net, SMALL, solver="atomic", solver_options={"dp": False}, jobs=1).valid


def test_the_list_schedule_takes_the_first_ready_atoms_in_order():
    from kapla.model.rounds import Atom
    from kapla.search.network.atomic.rounds import in_order

    def atom(name, *reads):
        return Atom(name, name[0], cycles=1, energy_j=0.0, macs=1, out_words=1,
                    inputs=tuple((r, 1) for r in reads) or ((None, 1),))

    # a0 a1 independent; b0 reads a0; b1 reads a1; c reads b0 and b1; d independent
    atoms = [atom("a0"), atom("a1"), atom("b0", "a0"), atom("b1", "a1"), atom("c", "b0", "b1"), atom("d")]
    assert in_order(atoms, 2) == [(0, 1), (2, 3), (4, 5)]
    assert in_order(atoms, 3) == [(0, 1, 5), (2, 3), (4,)]


@settings(max_examples=6, deadline=None)
@given(small_cnns(), st.sampled_from([0, 1, 2]))
def test_every_cnn_partition_schedule_of_a_random_cnn_passes_the_round_models_check(net, clusters):
    """CNN-Partition on random small CNNs: valid, every atom once, on the chip's
    engines, each layer on the engines of one block only."""
    opts = {"clusters": clusters} if clusters else {}
    _, info = _checked(net, "cnn-partition", opts)
    blocks = info["clusters"]
    per = 4 // blocks
    block_of = {e: i // per for i, e in enumerate(snake((2, 2)))}
    used: dict[str, set[int]] = {}
    for r in info["timeline"]:
        for atom, engine in r["atoms"]:
            used.setdefault(atom.split("#")[0], set()).add(block_of[engine])
    assert all(len(b) == 1 for b in used.values())


def test_no_layer_is_cut_finer_than_finest_rounds_of_the_chip():
    """The annealing's atoms: no layer in more than FINEST rounds' worth of the
    whole chip's engines, unless layer-sequential's even cut has more (LSTM-L's
    gates, beside its small element-wise layers, were cut into 1,575 atoms)."""
    from kapla.search.network.atomic.atoms import FINEST, even

    net = load_network("lstm_l", batch=1)
    sizes, _ = anneal(list(net), ATOMIC, "C|K")
    cut = even(list(net), ATOMIC, "C|K")
    for layer in net:
        assert _count(layer, sizes[layer.name]) <= max(FINEST * ATOMIC.num_nodes, _count(layer, cut[layer.name]))
    assert len({sizes[layer.name] for layer in net}) > 1  # the annealing still chooses


@pytest.mark.parametrize("solver", ["atomic", "layer-sequential", "cnn-partition", "il-pipe"])
def test_a_batch_is_cut_coarser_to_keep_its_atoms_within_the_budget(solver, monkeypatch):
    """Where a batch would have more atoms than the limit (ATOM_BUDGET, or the option
    max_atoms), each scheduler cuts its layers coarser until it has no more (the
    schedule still valid); where even its coarsest cut has more, it is one error."""
    import kapla.search.network.atomic.atoms as atoms_module

    net = load_network(EXAMPLES / "tiny_cnn.yaml", batch=4)
    free = kapla.schedule(net, SMALL, solver=solver, jobs=1).to_dict()["atomic"]["atoms"]
    budget = max(free // 3, len(net.layers) * net.batch * 2)
    assert free > budget  # the budget binds
    result = kapla.schedule(net, SMALL, solver=solver, solver_options={"max_atoms": budget}, jobs=1)
    assert result.valid and result.to_dict()["atomic"]["atoms"] <= budget
    monkeypatch.setattr(atoms_module, "ATOM_BUDGET", budget)
    assert kapla.schedule(net, SMALL, solver=solver, jobs=1).to_dict()["atomic"]["atoms"] <= budget
    one = len(net.layers)  # at least one atom per layer and sample
    with pytest.raises(KaplaError, match=f"one sample of .* is [0-9,]+ atoms even cut as coarsely.*over the {one - 1}"):
        kapla.schedule(net, SMALL, solver=solver, solver_options={"max_atoms": one - 1}, jobs=1)


def _coarsest(net, arch):
    return sum(min(_count(layer, t) for t in tilings(layer, arch, arch.pe_unroll.text)) for layer in net)


@pytest.mark.parametrize("solver", ["atomic", "layer-sequential", "cnn-partition", "il-pipe"])
@pytest.mark.parametrize("batch,samples", [(4, 2), (3, 1), (6, 3)])
def test_a_batch_over_the_budget_at_its_coarsest_runs_in_equal_groups(solver, batch, samples):
    """Where even the coarsest cut of the batch is over the limit, the batch runs in as few
    equal groups of samples as keep one within it, one after the other: the result is one
    group's schedule run that many times (its time, energy and atoms times the groups), its
    timeline one group's, every atom of it run once; a limit one sample is over is one error."""
    net = load_network(EXAMPLES / "tiny_cnn.yaml", batch=batch)
    one = _coarsest(net, SMALL)
    budget = one * samples + one // 2  # room for ``samples`` samples, not one more
    options = {"max_atoms": budget}
    result = kapla.schedule(net, SMALL, solver=solver, solver_options=options, jobs=1)
    group = kapla.schedule(net.with_batch(samples), SMALL, solver=solver, solver_options=options, jobs=1)
    runs = batch // samples
    info, alone = result.to_dict()["atomic"], group.to_dict()["atomic"]
    assert result.valid and result.batch == batch and info["violations"] == []
    assert info["batch_groups"] == {"groups": runs, "samples": samples}
    assert alone["batch_groups"] == {"groups": 1, "samples": samples}
    assert result.time == pytest.approx(runs * group.time)
    assert result.energy_j == pytest.approx(runs * group.energy_j)
    assert info["atoms"] == runs * alone["atoms"] and alone["atoms"] <= budget
    assert info["throughput"] == pytest.approx(alone["throughput"])
    ran = [a for r in info["timeline"] for a, _ in r["atoms"]]
    assert len(ran) == len(set(ran)) == alone["atoms"]
    assert {int(a.split("#")[1].split(":")[0]) for a in ran} == set(range(samples))
    assert sum(r.cost.total_energy for r in result.layers) == pytest.approx(
        runs * sum(r.cost.total_energy for r in group.layers))
