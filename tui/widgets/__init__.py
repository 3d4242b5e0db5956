"""Textual widgets: render and dispatch only."""
