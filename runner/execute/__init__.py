"""Side effects, driven only by a plan: timeline writes (clean, clustering, metadata-table
disabling), deletes and rewrites (on a thread pool or as Spark jobs), each re-checked under the
table lock. Hudi's formats come from `runner.hudi`, storage and the lock from `runner.storage`; the
run report is rendered by `runner.commands`.
"""
