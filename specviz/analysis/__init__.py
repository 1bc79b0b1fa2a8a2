"""A trace -> numbers: the metrics, the speedup and its prediction, the tree and vocabulary metrics, the
counters and the definitions they are stated in."""
