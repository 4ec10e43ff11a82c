"""Command groups for the developer tools, registered by services/cli.py (each exposes register(subparsers))."""

from typing import Any


def add_database_choice(parser: Any, url_help: str = "this database (e.g. a full AACT)") -> None:
    """A benchmark command's `--synthetic` / `--database-url` choice (neither: the app's own database)."""
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--synthetic", action="store_true", help="the generator's database (python -m services synth)")
    where.add_argument("--database-url", default=None, help=url_help)


def chosen_database(args: Any) -> Any:
    """The database `add_database_choice` asked for, made the one every service in this process reads."""
    import os

    from devtools import synth
    from services.data import runtime

    if args.synthetic or args.database_url:
        db = synth.synthetic_database(args.database_url) if args.synthetic else None
        os.environ["DATABASE_URL"] = db.url if db is not None else args.database_url
        runtime.reset()
    return runtime.get_db()
