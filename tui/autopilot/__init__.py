"""The autopilot (issue 37): keeps a server or a fleet at its best speculative k, proving each change."""
