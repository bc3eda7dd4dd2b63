"""YAML declarations → validated, typed `Project`. Knows nothing of Hudi or Spark."""
