"""`manualqa backup` and `restore`: a consistent copy of the whole data directory, and its checked return."""
