"""Quality over time: replay a fixed question set, score it (metrics), gate an upgrade against a
baseline (compare), render the comparison (report) and benchmark deployment profiles (bench)."""
