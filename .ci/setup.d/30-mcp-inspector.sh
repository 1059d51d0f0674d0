# The official MCP Inspector (npm, pinned), whose CLI lists mnemo's tools
# with --strict (tool-schema portability) and calls them through the
# TypeScript SDK's client (which checks structured results against each
# tool's outputSchema). Used by crates/mnemo-cli/tests/mcp_inspector.rs.
MCP_INSPECTOR_VERSION=2.12.0
MCP_INSPECTOR_PREFIX=/opt/mnemo-inspector
if [ "$(cat "$MCP_INSPECTOR_PREFIX/VERSION" 2>/dev/null)" != "$MCP_INSPECTOR_VERSION" ]; then
    rm -rf "$MCP_INSPECTOR_PREFIX"
    mkdir -p "$MCP_INSPECTOR_PREFIX"
    npm install --prefix "$MCP_INSPECTOR_PREFIX" --no-audit --no-fund --loglevel=error \
        "@modelcontextprotocol/inspector@$MCP_INSPECTOR_VERSION"
    echo "$MCP_INSPECTOR_VERSION" > "$MCP_INSPECTOR_PREFIX/VERSION"
fi
MNEMO_MCP_INSPECTOR="$MCP_INSPECTOR_PREFIX/node_modules/.bin/mcp-inspector"
export MNEMO_MCP_INSPECTOR
test -x "$MNEMO_MCP_INSPECTOR"
