"""Many runs: run directories, comparison grids, their reports, statistics and plots, contrasts."""
