"""Burst reports: the typed summary, its figures and verdict, text and the exports."""
