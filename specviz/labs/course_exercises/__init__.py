"""The Course exercises tab: the course's lessons worked, its presets and its project."""
