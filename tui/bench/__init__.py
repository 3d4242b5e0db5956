"""The A/B burst engine: request timing, load schedules, prompt sets,
statistics, equivalence and reports. Never imports textual."""
