# The bank's fault suite (crates/mnemo-cli/tests/bank_faults.rs) needs
# `chattr` (an immutable file in place of each target) and `mount` (a
# 512 KiB tmpfs for a full disk); CI runs as root. Both are in the base
# image (Debian 12); installed, pinned, only when missing.
if ! command -v chattr >/dev/null 2>&1; then
    apt-get install -y --no-install-recommends e2fsprogs=1.47.0-2
fi
if ! command -v mount >/dev/null 2>&1; then
    apt-get install -y --no-install-recommends mount=2.38.1-5+deb12u3
fi
