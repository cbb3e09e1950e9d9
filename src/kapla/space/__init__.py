"""What can be chosen, with no choosing: the layer problem, the layer spaces
(``layer/``) and the network spaces (``network/``: segments and their
inter-layer schemes)."""
