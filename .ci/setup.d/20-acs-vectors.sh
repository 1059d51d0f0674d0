# The ACS-Core conformance vectors (data only), replayed over HTTP and stdio
# by crates/mnemo-cli/tests/acs_conformance.rs. Pinned; skipped when present.
ACS_VECTORS_VERSION=0.27.0
if ! python3 -m pip show agent-evidence-vectors 2>/dev/null | grep -qx "Version: $ACS_VECTORS_VERSION"; then
    python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
        "agent-evidence-vectors==$ACS_VECTORS_VERSION"
fi
ACS_VECTORS_DIR="$(python3 -c 'import agent_evidence_vectors, os; print(os.path.dirname(agent_evidence_vectors.__file__))')/corpora/vectors-acs-core"
export ACS_VECTORS_DIR
test -f "$ACS_VECTORS_DIR/MANIFEST.json"
