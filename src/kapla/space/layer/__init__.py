"""The intra-layer space: frames over any hierarchy, the classic skeletons, blockings and loop orders."""
