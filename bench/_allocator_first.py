"""Imported by the resize benches before pyarrow: Arrow's allocator chosen as the `runner` command
chooses it (`runner.arrow_allocator`), so the benches measure what the command gets."""

from runner.arrow_allocator import choose_before_pyarrow

choose_before_pyarrow()
