"""Running a named solver: the registry, the layer service (cache, workers,
store) every network scheduler uses, and :func:`~kapla.scheduling.run.run`."""
