"""Management commands of the runs app."""
