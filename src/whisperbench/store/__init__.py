"""The run store: a run's folder (run.json, predictions.jsonl, summary.json), its writer lock and its score
tables on disk."""
