"""Stand-in nvtx with the module layout of nvtx 0.2.17 (a tool is always 'attached': every
Domain is real and logs its pushes and pops to $STANDIN_LOG)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from nvtx._lib.lib import Domain  # noqa: E402,F401
from nvtx.nvtx import annotate, end_range, get_domain, pop_range, push_range, start_range  # noqa: E402,F401
