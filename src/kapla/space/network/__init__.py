"""TANGRAM's network space: candidate segments, node regions and inter-layer schemes."""
