"""Use cases behind the CLI, one module per command; each returns a `CommandResult`.

Modules are imported lazily by `runner.cli`, so `runner validate` never imports pyspark.
"""
