"""From a TOML file plus command-line flags to a resolved run."""
