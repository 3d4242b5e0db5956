"""The Textual app shell: the two apps, their typed messages, themes and the app-wide mixins (render and
dispatch only; the figures come from the core)."""
