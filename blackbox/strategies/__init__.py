"""The built-in strategies, one file each; registered by name through entry points."""
