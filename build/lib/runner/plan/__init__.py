"""Pure planning: (declaration, table state, now) -> plan. No storage, no Spark, no clock."""
