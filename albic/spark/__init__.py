"""albic's Spark batch jobs. Only this package imports pyspark (design section 2)."""
