# The real OpenCode (npm `opencode-ai`, pinned) for the plugin's end-to-end
# test (crates/mnemo-cli/tests/e2e_opencode.rs), driven offline inside
# `unshare -n` against the mock model server as a custom provider
# (`@ai-sdk/openai-compatible`, which the opencode binary bundles).
#
# plugin-deps/: OpenCode npm-installs `@opencode-ai/plugin` into every config
# directory that names a plugin, when it starts, and waits for that install
# before it loads the plugins; offline the install never ends. The test
# copies this tree (node_modules, package.json, package-lock.json, the same
# pinned version) into its config directory, with an `offline=true` .npmrc,
# so the install finds everything in place and fetches nothing.
OPENCODE_VERSION=1.18.33
MNEMO_OPENCODE_PREFIX="${MNEMO_OPENCODE_PREFIX:-/opt/mnemo-opencode}"
if [ "$(cat "$MNEMO_OPENCODE_PREFIX/VERSION" 2>/dev/null)" != "$OPENCODE_VERSION" ]; then
    if command -v npm >/dev/null 2>&1 \
        && rm -rf "$MNEMO_OPENCODE_PREFIX" \
        && mkdir -p "$MNEMO_OPENCODE_PREFIX/plugin-deps" \
        && npm install --prefix "$MNEMO_OPENCODE_PREFIX" --no-audit --no-fund --loglevel=error \
            "opencode-ai@$OPENCODE_VERSION" \
        && npm install --prefix "$MNEMO_OPENCODE_PREFIX/plugin-deps" --no-audit --no-fund \
            --loglevel=error --save-exact "@opencode-ai/plugin@$OPENCODE_VERSION"; then
        echo "$OPENCODE_VERSION" > "$MNEMO_OPENCODE_PREFIX/VERSION"
    else
        echo "opencode: npm install failed; the OpenCode end-to-end test fails under CI=true"
    fi
fi
export MNEMO_OPENCODE_BIN="$MNEMO_OPENCODE_PREFIX/node_modules/.bin/opencode"
export MNEMO_OPENCODE_PLUGIN_DEPS="$MNEMO_OPENCODE_PREFIX/plugin-deps"
