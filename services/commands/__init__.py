"""Command groups of `python -m services` (each module exposes register(subparsers))."""
