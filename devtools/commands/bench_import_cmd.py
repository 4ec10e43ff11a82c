"""`python -m services bench import`: time an AACT export's import and its peak memory
(devtools/bench_import.py)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def register_bench(bench_subparsers: Any) -> None:
    """Add `import` under `bench`."""
    parser: argparse.ArgumentParser = bench_subparsers.add_parser(
        "import",
        help="a synthetic AACT export of N studies imported by `import aact`: time, rows/s, peak RSS",
        description="Writes a synthetic AACT flat-file export (AACT's format) of N studies, imports it with "
                    "`python -m services import aact` in a child process into a fresh embedded server under "
                    "<data dir>/bench-import, and reports wall time, rows per second and the child's peak "
                    "RSS; "
                    "both are deleted afterwards unless --keep. Exit 1 above 600 MB.",
    )
    parser.add_argument("--studies", type=int, default=100_000,
                        help="studies in the export (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--export", type=Path, default=None, help="import this export instead of writing one")
    parser.add_argument("--keep", action="store_true", help="keep the export and the database afterwards")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    """Measure and print; 1 when the import's peak RSS is over the target."""
    from devtools import bench_import
    from services.cli import print_result
    from services.errors import BadInput

    if not 1 <= args.studies <= 5_000_000:
        raise BadInput("--studies must be between 1 and 5,000,000.")
    result = bench_import.run(args.studies, args.seed, export=args.export, keep=args.keep)
    print_result(result, args.json, bench_import.table)
    return 0 if result["ok"] else 1
