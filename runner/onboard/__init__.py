"""`runner import`: find existing Hudi tables and write a declaration for each.

discover.py     walks the given paths through `Storage` (local or S3) and reads what each table
                found says about itself: hoodie.properties, and the policy of its latest clean (I/O)
declaration.py  pure: a valid, unique table name and the YAML text of a declaration, from those facts
"""

# How far below each path `runner import` searches by default: a bucket, a warehouse, a database and
# its tables are three or four levels; a bound keeps a mistaken root from listing a whole lake.
DEFAULT_MAX_DEPTH = 6
