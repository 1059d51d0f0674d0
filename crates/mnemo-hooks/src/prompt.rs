//! Claude Code `UserPromptSubmit`: the prompt the user just submitted,
//! recorded so that the PreCompact of the same turn can count it even when
//! the host has not yet written its transcript line.
//!
//! Observed with Claude Code 2.1.197 (issue #11): the host writes transcript
//! lines through an asynchronous queue. When the user's message makes the
//! model answer 400 "prompt is too long", the reactive auto compaction (and
//! so PreCompact, with that turn's `prompt_id`) can run before the message's
//! `user` line is in the file; the adapter then saw no re-grounding after
//! the untrusted content and denied, so the user's way out of a deny failed
//! at random. `UserPromptSubmit` runs before the turn starts and carries
//! `session_id`, `prompt_id` and `prompt` (the text typed; a slash command
//! such as `/compact` does not fire it, but a leading `/` is treated as a
//! command anyway).
//!
//! The record (`<store>.trails/<session>.prompt.json`, the latest prompt
//! only) says whether the text is words the user typed: not a command, not
//! one of the host's own line shapes ([`crate::claude::user_text_origin`]).
//! PreCompact uses it only for an `auto` trigger whose `prompt_id` is the
//! recorded one and when no transcript line of that turn is written yet
//! (so nothing of the turn, such as a tool result, can sit after it unseen
//! by the reader); a manual `/compact` never counts it. With `--memory`
//! nothing is recorded (the transcript alone decides).

use crate::claude::user_text_origin;
use crate::trail_hook::trail_dir;
use mnemo_acs::model::Origin;
use mnemo_guardian_store::open::GuardOptions;
use serde::{Deserialize, Serialize};
use std::io::Read;
use std::path::PathBuf;

/// What is kept of a submitted prompt (never its text).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubmittedPrompt {
    /// Host session id.
    pub session_id: String,
    /// The turn's id (`promptId` of its transcript lines).
    pub prompt_id: String,
    /// The text starts with `/` (a command, not the user's words).
    pub command: bool,
    /// The text is words the user typed (not a command, not a host line).
    pub typed: bool,
}

impl SubmittedPrompt {
    /// Classifies a prompt's text.
    pub fn of(session_id: &str, prompt_id: &str, prompt: &str) -> Self {
        let command = prompt.trim_start().starts_with('/');
        let typed = !command
            && !prompt.trim().is_empty()
            && user_text_origin(prompt).0 == Origin::UserInput;
        Self {
            session_id: session_id.to_string(),
            prompt_id: prompt_id.to_string(),
            command,
            typed,
        }
    }
}

/// The `UserPromptSubmit` input members used (unknown ones ignored).
#[derive(Debug, Deserialize)]
struct Input {
    #[serde(default)]
    session_id: String,
    #[serde(default)]
    prompt_id: Option<String>,
    #[serde(default)]
    prompt: Option<String>,
}

/// Where a session's latest prompt is recorded.
pub fn prompt_path(opts: &GuardOptions, session: &str) -> PathBuf {
    trail_dir(opts).join(format!(
        "{}.prompt.json",
        crate::trail_hook::file_stem(session)
    ))
}

/// Runs `mnemo hook claude-code user-prompt-submit`: records the prompt and
/// returns notes for stderr. Never blocks the prompt: whatever goes wrong
/// is only a note (the caller prints nothing on stdout and exits 0).
pub fn run_user_prompt_submit(opts: &GuardOptions, input: impl Read) -> String {
    let mut buf = Vec::new();
    if let Err(e) = input.take(crate::io::MAX_HOOK_INPUT).read_to_end(&mut buf) {
        return format!("mnemo: user-prompt-submit: cannot read the hook input: {e}\n");
    }
    let v: Input = match serde_json::from_slice(&buf) {
        Ok(v) => v,
        Err(e) => {
            return format!("mnemo: user-prompt-submit: hook input is not valid JSON: {e}\n");
        }
    };
    let Some(pid) = v.prompt_id.filter(|p| !p.is_empty()) else {
        return "mnemo: user-prompt-submit: no prompt_id in the hook input; nothing recorded\n"
            .into();
    };
    if opts.memory {
        return String::new();
    }
    let rec = SubmittedPrompt::of(&v.session_id, &pid, v.prompt.as_deref().unwrap_or(""));
    let path = prompt_path(opts, &v.session_id);
    let bytes = match serde_json::to_vec(&rec) {
        Ok(b) => b,
        Err(e) => return format!("mnemo: user-prompt-submit: {e}\n"),
    };
    match crate::trail_hook::write_whole(&path, &bytes) {
        Ok(()) => String::new(),
        Err(e) => format!(
            "mnemo: user-prompt-submit: cannot record the prompt in {}: {e}\n",
            path.display()
        ),
    }
}

/// The recorded prompt of `session` when it is the turn `prompt_id` and the
/// user's own words; `None` otherwise (none recorded, another turn, a
/// command, a host line, `--memory`, an unreadable record).
pub fn typed_prompt(
    opts: &GuardOptions,
    session: &str,
    prompt_id: &str,
) -> Option<SubmittedPrompt> {
    if opts.memory || prompt_id.is_empty() {
        return None;
    }
    let bytes = std::fs::read(prompt_path(opts, session)).ok()?;
    let rec: SubmittedPrompt = serde_json::from_slice(&bytes).ok()?;
    (rec.session_id == session && rec.prompt_id == prompt_id && rec.typed && !rec.command)
        .then_some(rec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_typed_words_count() {
        assert!(SubmittedPrompt::of("s", "p", "I checked notes.md myself.").typed);
        for host in [
            "/compact",
            "  /compact keep the plan",
            "<command-name>/compact</command-name>",
            "<local-command-stdout>Compacted</local-command-stdout>",
            "<system-reminder>x</system-reminder>",
            "<bash-stdout>ok</bash-stdout>",
            "<task-notification>done</task-notification>",
            "",
            "   ",
        ] {
            assert!(!SubmittedPrompt::of("s", "p", host).typed, "{host:?}");
        }
        assert!(SubmittedPrompt::of("s", "p", "/compact").command);
    }
}
