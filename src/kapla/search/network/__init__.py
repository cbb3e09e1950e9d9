"""Network schedulers, one package each; found by name through the registry (:mod:`kapla.scheduling.registry`)."""
