"""Search: the interfaces (:mod:`kapla.search.base`), the typed result, and the
strategies, each in a package of its own under ``layer/`` or ``network/``."""
