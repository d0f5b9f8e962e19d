"""tdsl's version (kept in the ground layer: the drivers and the disk cache read it)."""

__version__ = "0.1.0"
