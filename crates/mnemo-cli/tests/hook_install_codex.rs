//! `mnemo hook install codex` driven through the binary, on fixture
//! `config.toml` files: existing keys, comments and hooks kept, trusted
//! hashes written to the user config, idempotent, `--print` writes
//! nothing, bad TOML names the file and leaves it as it was. That the
//! hashes are the ones Codex computes is checked against the real binary
//! in `e2e_codex.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};

fn mnemo(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mnemo"))
        .current_dir(dir)
        .env("HOME", dir.join("home"))
        .env("CODEX_HOME", dir.join("codex-home"))
        .args(args)
        .output()
        .unwrap()
}

fn toml_of(p: &Path) -> toml::Value {
    toml::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

const EXISTING: &str = "# my Codex config\nmodel = \"o3\"\n\n[[hooks.PreCompact]]\nmatcher = \"auto\"\n[[hooks.PreCompact.hooks]]\ntype = \"command\"\ncommand = \"/usr/bin/logger compacting\"\n\n[mcp_servers.docs]\ncommand = \"docs-mcp\"\n";

#[test]
fn user_install_merges_trusts_and_is_idempotent() {
    let d = tempfile::tempdir().unwrap();
    let config = d.path().join("codex-home/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, EXISTING).unwrap();

    let args = [
        "hook", "install", "codex", "--user", "--bin", "mnemo", "--policy", "/p.toml",
    ];
    let printed = mnemo(d.path(), &[&args[..], &["--print"]].concat());
    assert!(printed.status.success(), "{printed:?}");
    assert_eq!(
        std::fs::read_to_string(&config).unwrap(),
        EXISTING,
        "--print wrote"
    );

    let out = mnemo(d.path(), &args);
    assert!(out.status.success(), "{out:?}");
    let text = std::fs::read_to_string(&config).unwrap();
    assert_eq!(
        text.as_bytes(),
        printed.stdout,
        "--print showed what is written"
    );
    assert!(
        text.starts_with("# my Codex config\nmodel = \"o3\"\n"),
        "{text}"
    );
    let v = toml_of(&config);
    assert_eq!(
        v["mcp_servers"]["docs"]["command"].as_str(),
        Some("docs-mcp")
    );
    let pre = v["hooks"]["PreCompact"].as_array().unwrap();
    assert_eq!(pre.len(), 3, "the user's group and ours (manual, auto)");
    assert_eq!(
        pre[0]["hooks"][0]["command"].as_str(),
        Some("/usr/bin/logger compacting")
    );
    assert_eq!(pre[1]["matcher"].as_str(), Some("manual"));
    assert_eq!(
        pre[1]["hooks"][0]["command"].as_str(),
        Some("mnemo hook codex pre-compact --policy /p.toml")
    );
    let post = v["hooks"]["PostCompact"].as_array().unwrap();
    assert_eq!(post.len(), 2);
    let state = v["hooks"]["state"].as_table().unwrap();
    let key = |e: &str, g: usize| format!("{}:{e}:{g}:0", config.display());
    for k in [
        key("pre_compact", 1),
        key("pre_compact", 2),
        key("post_compact", 0),
        key("post_compact", 1),
    ] {
        let h = state[&k]["trusted_hash"].as_str().unwrap();
        assert!(h.starts_with("sha256:") && h.len() == 71, "{k}: {h}");
    }
    assert!(
        !state.contains_key(&key("pre_compact", 0)),
        "the user's own hook is not trusted on their behalf"
    );

    let again = mnemo(d.path(), &args);
    assert!(again.status.success());
    assert_eq!(
        std::fs::read_to_string(&config).unwrap(),
        text,
        "idempotent"
    );
    assert!(
        String::from_utf8_lossy(&again.stdout).contains("unchanged"),
        "{again:?}"
    );
}

#[test]
fn project_install_puts_hooks_in_the_project_and_trust_in_the_user_config() {
    let d = tempfile::tempdir().unwrap();
    let out = mnemo(d.path(), &["hook", "install", "codex", "--bin", "mnemo"]);
    assert!(out.status.success(), "{out:?}");
    let project = d.path().join(".codex/config.toml");
    let user = d.path().join("codex-home/config.toml");
    let p = toml_of(&project);
    assert_eq!(p["hooks"]["PreCompact"].as_array().unwrap().len(), 2);
    assert!(
        p["hooks"].get("state").is_none(),
        "Codex ignores project hook state"
    );
    let u = toml_of(&user);
    let abs = std::path::absolute(&project).unwrap();
    let k = format!("{}:pre_compact:0:0", abs.display());
    assert!(u["hooks"]["state"][&k]["trusted_hash"].is_str(), "{u:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("trusted project"),
        "{out:?}"
    );
}

#[test]
fn bad_toml_is_named_and_nothing_is_written() {
    let d = tempfile::tempdir().unwrap();
    let config = d.path().join("codex-home/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    let bad = "model = \"o3\"\n[hooks\n";
    std::fs::write(&config, bad).unwrap();
    let out = mnemo(
        d.path(),
        &["hook", "install", "codex", "--user", "--bin", "mnemo"],
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&config.display().to_string()), "{err}");
    assert!(err.contains("line 2"), "{err}");
    assert_eq!(std::fs::read_to_string(&config).unwrap(), bad);
    // A project install with a broken user config writes neither file.
    let out = mnemo(d.path(), &["hook", "install", "codex", "--bin", "mnemo"]);
    assert!(!out.status.success());
    assert!(!d.path().join(".codex/config.toml").exists());
}
