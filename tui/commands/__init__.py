"""One module per `spectop` command; see `tui.cli`."""
