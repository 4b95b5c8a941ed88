"""A stand-in for ``nsys`` in tests: ``nsys export --type sqlite -o OUT [-f true] IN`` copies the
SQLite file named by FAKE_NSYS_SOURCE to OUT (the real nsys would convert IN). Anything else, or
FAKE_NSYS_FAIL set, fails the way nsys does: a message on stderr and exit 1.
"""

from __future__ import annotations

import os
import shutil
import sys


def main(argv: list[str]) -> int:
    if os.environ.get("FAKE_NSYS_FAIL"):
        print("ERROR: Failed to open the report file.", file=sys.stderr)
        return 1
    if argv[:3] != ["export", "--type", "sqlite"] or "-o" not in argv:
        print(f"fake nsys: unsupported arguments {argv}", file=sys.stderr)
        return 1
    out = argv[argv.index("-o") + 1]
    src = argv[-1]
    if not os.path.isfile(src):
        print(f"ERROR: {src} does not exist.", file=sys.stderr)
        return 1
    shutil.copy(os.environ["FAKE_NSYS_SOURCE"], out)
    # Beside the export, what nsys was asked, for the test to check.
    with open(out + ".argv", "w") as fh:
        fh.write("\n".join(argv))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
