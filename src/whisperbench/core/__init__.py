"""The lowest layer's helpers that know nothing of runs: the plug-in registry, languages, option ranges,
secret redaction, sha256 fingerprints, JSON files written whole, lazy package exports."""
