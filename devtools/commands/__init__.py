"""Command groups for the developer tools, registered by services/cli.py (each exposes register(subparsers))."""
