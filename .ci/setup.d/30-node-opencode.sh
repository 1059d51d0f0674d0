# Node.js for the OpenCode plugin's tests (integrations/opencode, `node --test`,
# no npm packages). Node 20 or later; Debian's nodejs package when absent.
if ! node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' 2>/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs >/dev/null
fi
node --version
