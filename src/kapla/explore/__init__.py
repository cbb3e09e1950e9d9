"""Exploring around one schedule: solvers side by side (:mod:`.compare`),
hardware variants by field (:mod:`.variants`), sweeps (:mod:`.sweep`) and studies."""
