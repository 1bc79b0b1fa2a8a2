"""The Sampling lab: rejection sampling on one position's p and q, its maths and its figures."""
