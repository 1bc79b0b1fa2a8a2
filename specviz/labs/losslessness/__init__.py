"""The Losslessness tab: checks through the real engine that the output follows the target, and their figures."""
