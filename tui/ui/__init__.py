"""The Textual app shell: the two apps on one base, themes and the terminal guard (render and dispatch only;
the figures come from the core)."""
