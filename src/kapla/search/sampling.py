"""Seeded sampling that every sampling search shares: probabilities, seeds and
generators that give the same stream in every process for the same inputs."""

from __future__ import annotations

import zlib

import numpy as np

DEFAULT_P = 0.1  # the paper's setting on the multi-node accelerator


def check_probability(p: float) -> float:
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 < p <= 1:
        raise ValueError(f"p must be a probability in (0, 1], got {p!r}")
    return float(p)


def check_seed(seed: int) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a whole number of at least 0, got {seed!r}")
    return seed


def generator(seed: int, *parts: object) -> np.random.Generator:
    """A generator seeded by ``seed`` and ``parts`` (by their text, so the same
    inputs give the same stream in every process)."""
    return np.random.default_rng([seed, zlib.crc32(repr(parts).encode())])


__all__ = ["DEFAULT_P", "check_probability", "check_seed", "generator"]
