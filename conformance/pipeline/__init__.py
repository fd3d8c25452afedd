"""kgc's data pipeline on Spark (PySpark): corpus-scale conformance (`kgc pipeline conform`) and
broker logs (`kgc pipeline logs`). Spark is an optional extra (`pip install kgc[spark]`); only
modules that need it import pyspark, and only inside functions, so the rest of kgc runs without."""
