"""Processes this package starts and the machine they run on: a supervised child, the start method of every
worker pool, the CPUs, load and memory of this host."""
