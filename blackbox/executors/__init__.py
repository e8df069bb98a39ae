"""The built-in executors; registered by name through entry points."""
