//! `mnemo hook install claude-code|opencode` driven through the binary, on
//! fixture configuration files: existing keys and hooks kept, idempotent,
//! `--print` writes nothing, bad JSON names the file and leaves it as it was.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

fn mnemo(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mnemo"))
        .current_dir(dir)
        .env("HOME", dir.join("home"))
        .env_remove("XDG_CONFIG_HOME")
        .args(args)
        .output()
        .unwrap()
}

fn json(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

const EXISTING: &str = r#"{
  "permissions": {"allow": ["Bash(cargo test:*)"]},
  "hooks": {
    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./audit.sh"}]}],
    "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "./hello.sh"}]}]
  },
  "statusLine": {"type": "command", "command": "./status.sh"}
}
"#;

#[test]
fn claude_code_install_merges_keeps_everything_and_is_idempotent() {
    let d = tempfile::tempdir().unwrap();
    let settings = d.path().join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(&settings, EXISTING).unwrap();

    let printed = mnemo(
        d.path(),
        &[
            "hook",
            "install",
            "claude-code",
            "--print",
            "--bin",
            "mnemo",
        ],
    );
    assert!(printed.status.success(), "{printed:?}");
    assert_eq!(
        std::fs::read_to_string(&settings).unwrap(),
        EXISTING,
        "--print wrote"
    );
    let shown: Value = serde_json::from_slice(&printed.stdout).unwrap();

    let out = mnemo(
        d.path(),
        &[
            "hook",
            "install",
            "claude-code",
            "--bin",
            "mnemo",
            "--policy",
            ".mnemo/guardian.toml",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("updated"),
        "{out:?}"
    );
    let j = json(&settings);
    assert_eq!(j["permissions"]["allow"][0], "Bash(cargo test:*)");
    assert_eq!(j["statusLine"]["command"], "./status.sh");
    assert_eq!(
        j["hooks"]["PreToolUse"][0]["hooks"][0]["command"],
        "./audit.sh"
    );
    let pre = j["hooks"]["PreCompact"].as_array().unwrap();
    assert_eq!(pre.len(), 2);
    for (g, m) in pre.iter().zip(["manual", "auto"]) {
        assert_eq!(g["matcher"], m);
        assert_eq!(
            g["hooks"][0]["command"],
            "mnemo hook claude-code pre-compact --policy .mnemo/guardian.toml"
        );
    }
    assert_eq!(
        j["hooks"]["PostCompact"][0]["hooks"][0]["command"],
        "mnemo hook claude-code post-compact --policy .mnemo/guardian.toml"
    );
    // The user's SessionStart (startup) group stays; ours is its own group.
    let ss = j["hooks"]["SessionStart"].as_array().unwrap();
    assert_eq!(ss[0]["matcher"], "startup");
    assert_eq!(ss[0]["hooks"][0]["command"], "./hello.sh");
    assert_eq!(ss[1]["matcher"], "compact");
    // What --print showed is what was then written, but for the policy.
    assert_eq!(shown["hooks"]["PreCompact"][0]["matcher"], "manual");

    let before = std::fs::read_to_string(&settings).unwrap();
    let again = mnemo(
        d.path(),
        &[
            "hook",
            "install",
            "claude-code",
            "--bin",
            "mnemo",
            "--policy",
            ".mnemo/guardian.toml",
        ],
    );
    assert!(again.status.success());
    assert!(
        String::from_utf8_lossy(&again.stdout).contains("unchanged"),
        "{again:?}"
    );
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), before);
}

#[test]
fn claude_code_install_defaults_to_this_binary_and_user_scope_goes_home() {
    let d = tempfile::tempdir().unwrap();
    let out = mnemo(d.path(), &["hook", "install", "claude-code", "--user"]);
    assert!(out.status.success(), "{out:?}");
    assert!(!d.path().join(".claude").exists(), "project file written");
    let j = json(&d.path().join("home/.claude/settings.json"));
    let cmd = j["hooks"]["PreCompact"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap();
    let bin = std::fs::canonicalize(env!("CARGO_BIN_EXE_mnemo")).unwrap();
    assert!(
        cmd.starts_with(&*bin.to_string_lossy()) || cmd.starts_with(env!("CARGO_BIN_EXE_mnemo")),
        "{cmd}"
    );
    assert!(cmd.ends_with(" hook claude-code pre-compact"), "{cmd}");
}

#[test]
fn bad_json_is_a_clear_error_and_nothing_is_written() {
    let d = tempfile::tempdir().unwrap();
    let settings = d.path().join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    let bad = "{\n  \"hooks\": {\"PreCompact\": [}\n}\n";
    std::fs::write(&settings, bad).unwrap();
    let out = mnemo(d.path(), &["hook", "install", "claude-code"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&*settings.to_string_lossy()), "{err}");
    assert!(err.contains("not valid JSON at line 2"), "{err}");
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), bad);
    // A wrong shape names the field.
    std::fs::write(&settings, r#"{"hooks": {"PostCompact": "x"}}"#).unwrap();
    let out = mnemo(d.path(), &["hook", "install", "claude-code"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("`hooks.PostCompact` must be an array"));
    let names: Vec<_> = std::fs::read_dir(settings.parent().unwrap())
        .unwrap()
        .collect();
    assert_eq!(names.len(), 1, "a temporary file was left");
}

#[test]
fn opencode_install_adds_the_plugin_once() {
    let d = tempfile::tempdir().unwrap();
    let cfg = d.path().join("opencode.json");
    std::fs::write(
        &cfg,
        r#"{"model": "mock/m", "plugin": ["opencode-wakatime"], "provider": {"mock": {}}}"#,
    )
    .unwrap();
    for _ in 0..2 {
        let out = mnemo(d.path(), &["hook", "install", "opencode"]);
        assert!(out.status.success(), "{out:?}");
    }
    let j = json(&cfg);
    assert_eq!(
        j["plugin"],
        serde_json::json!(["opencode-wakatime", "mnemo-opencode"])
    );
    assert_eq!(j["model"], "mock/m");
    assert!(j["provider"]["mock"].is_object());
    std::fs::write(&cfg, "{\"plugin\": [\n").unwrap();
    let out = mnemo(d.path(), &["hook", "install", "opencode"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("opencode.json: not valid JSON"));
    assert_eq!(std::fs::read_to_string(&cfg).unwrap(), "{\"plugin\": [\n");
}
