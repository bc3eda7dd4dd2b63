"""The Hudi on-disk model: timeline, file names, metadata formats, storage and the file-system view."""
