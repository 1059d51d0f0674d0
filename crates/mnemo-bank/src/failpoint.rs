//! Deterministic fault injection for the commit machinery (tests only).
//!
//! Every filesystem mutation of a commit, a roll-forward and a rollback is
//! a numbered *step* ([`step`] is called just before it). With the cargo
//! feature `failpoints` (enabled for the workspace's tests, never in a
//! normal build) the environment variable `MNEMO_FAILPOINT` selects one:
//!
//! * `kill@N`: the process kills itself with `SIGKILL` just before step N
//!   (as `kill -9` would, at an exact place instead of an instant);
//! * `error@N`: step N fails with an injected I/O error;
//! * `trace`: every step is printed on stderr as `mnemo-failpoint N: what`;
//! * several, comma-separated (`error@12,kill@15`: a rollback killed).
//!
//! Without the feature, [`step`] does nothing and is compiled away.

use crate::Result;

#[cfg(feature = "failpoints")]
mod imp {
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicU32, Ordering};

    use crate::{BankError, Result};

    #[derive(Clone, Copy, PartialEq, Eq)]
    enum Action {
        Kill,
        Error,
    }

    #[derive(Default)]
    struct Plan {
        trace: bool,
        at: Vec<(u32, Action)>,
    }

    static STEP: AtomicU32 = AtomicU32::new(0);

    fn plan() -> &'static Plan {
        static PLAN: OnceLock<Plan> = OnceLock::new();
        PLAN.get_or_init(|| {
            let v = std::env::var("MNEMO_FAILPOINT").unwrap_or_default();
            let mut plan = Plan::default();
            for part in v.split(',').map(str::trim) {
                let n = |s: &str| s.trim().parse::<u32>().ok();
                if part == "trace" {
                    plan.trace = true;
                } else if let Some(k) = part.strip_prefix("kill@").and_then(n) {
                    plan.at.push((k, Action::Kill));
                } else if let Some(k) = part.strip_prefix("error@").and_then(n) {
                    plan.at.push((k, Action::Error));
                }
            }
            plan
        })
    }

    pub fn step(what: &str) -> Result<()> {
        let n = STEP.fetch_add(1, Ordering::SeqCst) + 1;
        let plan = plan();
        if plan.trace {
            eprintln!("mnemo-failpoint {n}: {what}");
        }
        match plan.at.iter().find(|(k, _)| *k == n).map(|(_, a)| *a) {
            Some(Action::Kill) => {
                eprintln!("mnemo-failpoint {n}: kill -9 before {what}");
                let pid = std::process::id().to_string();
                let _ = std::process::Command::new("kill")
                    .args(["-KILL", &pid])
                    .status();
                // `kill` is missing: die without unwinding all the same.
                std::process::abort()
            }
            Some(Action::Error) => Err(BankError::io(
                what,
                std::io::Error::other(format!("injected failure at step {n}")),
            )),
            None => Ok(()),
        }
    }
}

/// Marks the next filesystem mutation (`what` names it).
#[cfg(feature = "failpoints")]
pub fn step(what: &str) -> Result<()> {
    imp::step(what)
}

/// Marks the next filesystem mutation (no-op without `failpoints`).
#[cfg(not(feature = "failpoints"))]
#[inline(always)]
pub fn step(_what: &str) -> Result<()> {
    Ok(())
}
