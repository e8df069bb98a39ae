"""One run in memory: ``optimize``, its records, stop conditions, logs and progress display."""
