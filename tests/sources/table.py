"""The seed table of issue 36: every number, example and exercise the app quotes from a seed document (seeds 000,
001 and 004, seed 003's batched verification, and seed 002's figures outside the course tab), each with where it is
in the seed, the seed's value, specviz's value and whether the seed is right. tests/test_seed_table.py runs over it,
and over tests/sources/table_course.py's COURSE_ROWS (seed 002's course: its experiments, worked examples, exercises).

The rows themselves live in the package (specviz/labs/seed_rows*.py), next to the figures they check;
tests/sources/doc.py writes them into docs/sources-checked.md.
"""

from tests.sources.rows import SEED_ROWS

__all__ = ["SEED_ROWS"]
