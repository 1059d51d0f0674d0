//! The picture of a memory bank: `mnemo report`.
//!
//! This crate owns the report's data model ([`model`]: budget per phase,
//! entries with their score and explain, sizes, skipped inputs, C7 archive
//! trims, the cross-reference graph and the Guardian's timeline), computed by
//! [`build`] from bank files and Guardian store rows that the caller has
//! already read ([`input`]), and its two renderings: [`to_json`] and
//! [`to_html`] (one self-contained page: inline CSS and SVG, a few lines of
//! vanilla JavaScript, no network).
//!
//! What it must never do: any I/O (callers hand it text and rows), let a
//! string reach the page or the JSON without the scrubber (every input text is
//! scrubbed before it is parsed) or reach the page without HTML escaping,
//! depend on anything but its input for its bytes (no clock, no hash-map
//! order: the same bank gives the same bytes), or panic on any input.

pub mod html;
pub mod input;
pub mod model;

pub use html::to_html;
pub use input::{BankFiles, CompactionRow, SessionRows, StepRow, StoreDump};
pub use mnemo_compress::gatelog::GATE_LOG;
pub use model::{GateReport, GatesReport, Report, build};

/// The report as pretty-printed JSON (keys in declaration order), ending
/// with a newline.
pub fn to_json(report: &Report) -> String {
    let mut s = serde_json::to_string_pretty(report).unwrap_or_else(|e| {
        // Serialising plain structs of strings and numbers cannot fail; say
        // so in the output rather than panic if it ever does.
        format!("{{\"error\": \"{}\"}}", e.to_string().replace('"', "'"))
    });
    s.push('\n');
    s
}
