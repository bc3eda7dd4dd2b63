"""The Hudi on-disk model: timeline, file names, metadata formats and the file-system view.

It reads and writes through `runner.storage`, which owns where files live and the runner's lock.
"""
