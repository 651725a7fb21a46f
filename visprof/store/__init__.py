"""The results store: one SQLite file of profiles (versioned schema), its export formats.

schema            the tables and the schema version
cell              one cell's identity: model x configuration
flatten           a ProfileResult -> the store's rows
result_store      ResultStore / open_store: write, resume, read back
references        the reference rows: throughputs measured elsewhere (timm's CSVs)
category_columns  the per-category figures as columns of the flattened rows
versions          the software versions a cell was measured with
export            csv / parquet / json / timm exports
timm_format       rows in the column layout of timm's benchmark CSVs
"""
