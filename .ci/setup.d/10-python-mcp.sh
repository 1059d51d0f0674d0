# The official Python MCP SDK, the client of the MCP end-to-end test.
python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore 'mcp==2.3.0'
