"""The ask/tell kernel: the strategy, population, noise-table, problem and executor protocols (numpy only)."""
