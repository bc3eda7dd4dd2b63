"""Pure planning: (declaration, table state, now) -> a plan of typed steps. No storage, no Spark, no clock.

`steps.py` defines the step kinds and their JSON form, `build.py` holds one planner per kind, and
`model.py` the plan itself; `runner.planner` reads a table from storage and calls them.
"""
