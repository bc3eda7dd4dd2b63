"""Side effects, driven only by a Plan: timeline writes, Spark jobs, the run report."""
