"""Textual screens: render and dispatch only."""
