"""``python -m inkray ARGS``: runs the inkray program installed with the package, with the same
command line (``inkray --help`` lists it), in place of this Python process."""

from __future__ import annotations

import os
import sys
from typing import List, Optional

from . import binary_path


def main(argv: Optional[List[str]] = None) -> None:
    program = binary_path()
    if not os.access(program, os.X_OK):
        sys.exit(f"inkray: the program is missing from the package ({program}); reinstall it with pip install .")
    args = sys.argv[1:] if argv is None else list(argv)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(program, ["inkray", *args])


if __name__ == "__main__":
    main()
