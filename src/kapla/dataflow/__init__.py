"""Dataflow: the tensor-centric directive representation every solver produces."""
