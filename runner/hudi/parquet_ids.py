"""Field ids of the Parquet footer's Thrift structs (`parquet.thrift`), for the modules that read and
rewrite footers and page headers through `runner.hudi.thrift_compact`: the binary copy
(`parquet_copy`) and the deflating writer (`parquet_deflate`)."""

MAGIC = b"PAR1"

# FileMetaData
F_SCHEMA, F_NUM_ROWS, F_ROW_GROUPS, F_KEY_VALUE, F_CREATED_BY, F_COLUMN_ORDERS = 2, 3, 4, 5, 6, 7
F_ENCRYPTION, F_SIGNING_KEY = 8, 9
# RowGroup
R_COLUMNS, R_TOTAL_BYTE_SIZE, R_NUM_ROWS, R_SORTING_COLUMNS, R_FILE_OFFSET = 1, 2, 3, 4, 5
R_TOTAL_COMPRESSED, R_ORDINAL = 6, 7
# ColumnChunk
C_FILE_PATH, C_FILE_OFFSET, C_META = 1, 2, 3
C_PAGE_INDEX = (4, 5, 6, 7)  # offset index and column index: offset and length of each
C_CRYPTO = (8, 9)
# ColumnMetaData
M_TYPE, M_PATH, M_CODEC, M_NUM_VALUES, M_UNCOMPRESSED, M_COMPRESSED = 1, 3, 4, 5, 6, 7
M_DATA_PAGE, M_INDEX_PAGE, M_DICTIONARY_PAGE = 9, 10, 11
M_BLOOM = (14, 15)
M_ENCODINGS, M_STATISTICS, M_ENCODING_STATS, M_SIZE_STATISTICS = 2, 12, 13, 16
# Statistics
ST_NULL_COUNT = 3
# SchemaElement
S_TYPE, S_REPETITION, S_NAME, S_CHILDREN = 1, 3, 4, 5
# PageHeader, and the field of its data page header (v1, v2) holding num_values
P_TYPE, P_UNCOMPRESSED_SIZE, P_COMPRESSED_SIZE, P_CRC, P_DATA_V1, P_DATA_V2 = 1, 2, 3, 4, 5, 8
# PageType
DATA_PAGE, DICTIONARY_PAGE, DATA_PAGE_V2 = 0, 2, 3
# CompressionCodec
UNCOMPRESSED, SNAPPY, GZIP = 0, 1, 2
