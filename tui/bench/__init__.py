"""The A/B burst engine (`session.py` for the CLI and the screen), its reports and kept files. No textual."""
