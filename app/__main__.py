"""Entry point of ``dsh-replay-tui``."""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Start the debugger on a scenario directory."""
    print("dsh-replay-tui: the interactive debugger is not available yet", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
