"""The results directory: results.json, trials.jsonl, samples.csv, the schema."""
