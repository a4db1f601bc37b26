"""Checks on the package's own structure (run by the test suite)."""
