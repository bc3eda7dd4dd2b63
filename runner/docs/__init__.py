"""`runner docs`: a self-contained static HTML report of the selected tables, in the manner of dbt docs.

`collect` reads each table (read-only) and plans it with the same planner `runner plan` uses;
`charts` turns that into chart-ready numbers (pure); `page` writes one HTML file with the CSS,
the JavaScript and the data inlined, so the report opens offline and from any folder.
Nothing here imports pyspark.
"""
