"""The largest sizes kapla handles, checked where a network is built.

The cost model counts words and cycles in 64-bit integers and the solvers
enumerate the divisors of every loop bound. A batch or layer dimension
beyond ``MAX_SIZE``, or a layer beyond ``MAX_MACS`` multiply-accumulates,
would overflow those counts or make the factor spaces too large to search,
so it is refused up front with the size named rather than run for ever.
"""

MAX_SIZE = 1 << 20  # 1,048,576: batch, channels, fmap height or width, filter size
MAX_MACS = 1 << 50  # per layer and batch: word counts times tensor bits stay below 2**63
