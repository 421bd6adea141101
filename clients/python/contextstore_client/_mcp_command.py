"""contextstore-mcp, the console script: the MCP server's main, or one line saying how to
install the server's dependencies when the client was installed without its `mcp` extra."""

from __future__ import annotations

import sys

INSTALL_HINT = "pip install 'contextstore-client[mcp]'"


class MissingExtra(ModuleNotFoundError):
    """The MCP server's dependencies (the client's `mcp` extra) are not installed."""

    def __init__(self, name: str) -> None:
        super().__init__(f"contextstore-mcp needs the MCP SDK, which the client installs only with "
                         f"its mcp extra ({name} is missing): {INSTALL_HINT}", name=name)


def main(argv: list[str] | None = None) -> None:
    try:
        from contextstore_client.mcp_server import main as serve
    except MissingExtra as missing:
        print(f"error: {missing}", file=sys.stderr)
        raise SystemExit(2) from None
    serve(argv)


if __name__ == "__main__":
    main()
