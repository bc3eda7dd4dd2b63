"""Side effects, driven only by a plan's steps: one handler per step kind (`apply.HANDLERS`),
timeline writes, deletes and Spark jobs. The per-table loop and the run report are the service
layer's (`runner.service`)."""
