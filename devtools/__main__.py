"""Entry point of the developer tools: `python -m devtools bench …` and `python -m devtools synth …`
(`python -m services bench|synth …` hands over to this)."""

import sys

from devtools.commands import bench_cmd, synth_cmd
from services.cli import build_parser, run

sys.exit(run(build_parser([synth_cmd, bench_cmd], prog="python -m devtools"), sys.argv[1:]))
