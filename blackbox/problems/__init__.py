"""The built-in problems; registered by name through entry points."""
