"""The names of the metadata table's partitions, apart from everything that reads or writes them.

Planning a table without a metadata table needs these names but none of the codecs (numpy, Avro,
HFile) behind the rest of this package, so they live here and a plain clean starts up lighter.
"""

FILES = "files"
COLUMN_STATS = "column_stats"
BLOOM_FILTERS = "bloom_filters"
# Expression indexes: column stats or bloom filters of an expression over columns, in their own partition.
EXPRESSION_INDEX_PREFIX = "expr_index_"
# The index types an expression index can have whose clean the runner records (`ExpressionIndexer.buildClean`).
EXPRESSION_INDEX_TYPES = (COLUMN_STATS, BLOOM_FILTERS)
# Partitions a clean leaves alone: they map record keys or partitions, not files.
UNTOUCHED_BY_CLEAN = ("record_index", "partition_stats", "secondary_index_")
