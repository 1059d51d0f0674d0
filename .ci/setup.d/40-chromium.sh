# Debian's Chromium, the browser that `mnemo report`'s page is checked in
# (crates/mnemo-cli/tests/report_browser.rs drives it headless over the
# DevTools protocol on a pipe, with Python's standard library only).
# Pinned to the bookworm-security build; the bookworm release build is the
# fallback when the security archive has moved on.
if ! command -v chromium >/dev/null 2>&1; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        'chromium=156.0.8078.114-1~deb12u1' fonts-dejavu-core \
    || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        chromium fonts-dejavu-core
fi
chromium --version
export MNEMO_CHROMIUM="$(command -v chromium)"
