"""LSTMs: Show-and-Tell (one cell of size 512) and GNMT (four stacked cells of 1000).

A cell is four gate FC layers over the concatenation of h_{t-1} and x_t,
followed by element-wise layers computing c_t = f*c_{t-1} + i*g and
h_t = o*c_t (the activation functions carry no MACs and are folded in).
As in TANGRAM, the output stage (log-probabilities) is one element-wise layer
and the initial states are external inputs.
"""

from kapla.workload.network import Network, NetworkBuilder


def lstm_cell(b: NetworkBuilder, name: str, size: int, x: str) -> tuple[str, str]:
    """Add a cell named ``name`` reading ``x``; returns the names of (c_t, h_t)."""
    c_in = b.input(f"{name}_cinit", size)
    h_in = b.input(f"{name}_hinit", size)
    for gate in ("cand", "igate", "fgate", "ogate"):
        b.fc(f"{name}_{gate}", [h_in, x], size)
    b.eltwise(f"{name}_cout_f", [c_in, f"{name}_fgate"], mode="mul")
    b.eltwise(f"{name}_cout_i", [f"{name}_cand", f"{name}_igate"], mode="mul")
    c_out = b.eltwise(f"{name}_cout", [f"{name}_cout_i", f"{name}_cout_f"], mode="add")
    h_out = b.eltwise(f"{name}_hout", [c_out, f"{name}_ogate"], mode="mul")
    return c_out, h_out


def _stacked(name: str, size: int, cells: int, batch: int) -> Network:
    b = NetworkBuilder(name, batch)
    x = b.input("data", size)  # the word embedding is a lookup, not computed here
    for i in range(cells):
        _, x = lstm_cell(b, f"cell{i}" if cells > 1 else "cell", size, x)
    b.eltwise("wd", [x], mode="unary")
    return b.build()


def lstm_m(batch: int = 64) -> Network:
    return _stacked("lstm_m", 512, 1, batch)


def lstm_l(batch: int = 64) -> Network:
    return _stacked("lstm_l", 1000, 4, batch)
