//! Reading inputs and writing files at the edge.

use std::fmt;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow};
use mnemo_model::Config;

/// A hint attached to an error: what the user can do next.
#[derive(Debug)]
pub struct Hint(pub String);

impl fmt::Display for Hint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Hint {}

/// True when the error comes from writing to a pipe whose reader has gone.
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// An error with a hint below it.
pub fn hinted(message: impl fmt::Display, hint: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(Hint(hint.into())).context(message.to_string())
}

/// Name of the configuration file looked up from the working directory.
pub const CONFIG_FILE: &str = "mnemo.toml";

/// Finds `mnemo.toml` in `start` or a parent directory.
pub fn find_config(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .map(|d| d.join(CONFIG_FILE))
        .find(|p| p.is_file())
}

/// Loads the configuration: `--config` if given, else `mnemo.toml` found
/// upward, else the built-in defaults.
pub fn load_config(explicit: Option<&Path>) -> Result<(Config, Option<PathBuf>)> {
    let path = match explicit {
        Some(p) => Some(p.to_path_buf()),
        None => {
            let cwd = std::env::current_dir().context("cannot read the working directory")?;
            find_config(&cwd)
        }
    };
    let Some(path) = path else {
        return Ok((Config::default(), None));
    };
    let text = std::fs::read_to_string(&path).map_err(|e| {
        anyhow::Error::new(e).context(format!("cannot read the configuration {}", path.display()))
    })?;
    let config = Config::from_toml_str(&text, &path.display().to_string()).map_err(|e| {
        hinted(
            format!("invalid configuration: {e}"),
            "`mnemo init --print` shows every key with its default value",
        )
    })?;
    Ok((config, Some(path)))
}

/// Resolves a configured path: relative paths are taken from the directory
/// that holds the configuration file, or the working directory without one.
pub fn config_relative(config_file: Option<&Path>, configured: &str) -> PathBuf {
    let p = PathBuf::from(configured);
    if p.is_absolute() {
        return p;
    }
    match config_file.and_then(Path::parent) {
        Some(dir) if !dir.as_os_str().is_empty() => dir.join(p),
        _ => p,
    }
}

/// Reads a file, or standard input for `-`.
pub fn read_input(path: &Path) -> Result<(String, String)> {
    if path.as_os_str() == "-" {
        let mut buf = Vec::new();
        std::io::stdin()
            .read_to_end(&mut buf)
            .context("cannot read standard input")?;
        let text = String::from_utf8(buf).map_err(|e| {
            anyhow!(
                "<stdin>: not valid UTF-8 (byte {} is not part of a UTF-8 character)",
                e.utf8_error().valid_up_to()
            )
        })?;
        return Ok((text, "<stdin>".to_string()));
    }
    let name = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| {
        let hint = match e.kind() {
            std::io::ErrorKind::NotFound => "check the path; use `-` to read standard input",
            std::io::ErrorKind::PermissionDenied => "check the file's permissions",
            _ => "check that the path names a readable file",
        };
        anyhow::Error::new(Hint(hint.into()))
            .context(e)
            .context(format!("cannot read {name}"))
    })?;
    let text = String::from_utf8(bytes).map_err(|e| {
        anyhow!(
            "{name}: not valid UTF-8 (byte {} is not part of a UTF-8 character)",
            e.utf8_error().valid_up_to()
        )
    })?;
    Ok((text, name))
}

/// Writes `contents` to a new file `path` atomically: a temporary file in the
/// same directory is written, fsynced, then linked into place, which fails if
/// `path` exists (nothing a user wrote is replaced); the directory is fsynced.
pub fn write_new_file(path: &Path, contents: &str) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let file_name = path
        .file_name()
        .ok_or_else(|| anyhow!("{} is not a file path", path.display()))?;
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        file_name.to_string_lossy(),
        std::process::id()
    ));
    let result = (|| -> Result<()> {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .with_context(|| format!("cannot create {}", tmp.display()))?;
        f.write_all(contents.as_bytes())
            .with_context(|| format!("cannot write {}", tmp.display()))?;
        f.sync_all()
            .with_context(|| format!("cannot sync {}", tmp.display()))?;
        std::fs::hard_link(&tmp, path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                hinted(
                    format!("{} already exists; it was left as it is", path.display()),
                    "move it away first, or edit it: `mnemo config check` validates it",
                )
            } else {
                anyhow::Error::new(e).context(format!("cannot create {}", path.display()))
            }
        })?;
        if let Ok(d) = std::fs::File::open(&dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    let _ = std::fs::remove_file(&tmp);
    result
}
