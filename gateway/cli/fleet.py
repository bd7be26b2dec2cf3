"""`manualqa index export` / `index import` and `manualqa signing ...`: signed index archives for a fleet."""
