"""The seed table's rows for seed 002's course (issue 36): Lesson 2's worked example, Lesson 3's pairs, the seven
"Apply" exercises, the worked examples of Lessons 5-7 and every printed figure of the hands-on project's Experiments
1-4, each with where it is in the seed, the seed's value, specviz's value and whether the seed is right.
tests/test_seed_table.py runs over COURSE_ROWS with tests/sources/table.py's SEED_ROWS.

The rows themselves live in the package (tests/sources/rows_course.py and seed_rows_course_project.py), next to
the figures they check; tests/sources/doc.py writes them into docs/sources-checked.md.
"""

from tests.sources.rows_course import COURSE_ROWS

__all__ = ["COURSE_ROWS"]
