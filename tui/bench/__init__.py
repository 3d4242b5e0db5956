"""The A/B burst engine: one burst session (`session.py`, for the CLI and the screen), request
timing, load schedules, prompt sets, statistics, equivalence, reports and the kept burst files
(`burst_store.py`). Never imports textual."""
