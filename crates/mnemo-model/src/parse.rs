//! Parsers for subtask summaries: Pantheon's markdown `## subtask_summary`
//! block, JSON and YAML; one record or a list.
//!
//! Every error names the input, the line (and column where the format tells)
//! and the field, so that a person can go and fix it.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::record::{DroppedField, Field, SummaryRecord, field_for};

/// The format of an input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Pantheon's agent-return markdown (`## subtask_summary` + `**key:** value`).
    Markdown,
    /// A JSON object or array of objects.
    Json,
    /// A YAML mapping or sequence of mappings.
    Yaml,
}

impl Format {
    /// Guesses the format from the file name, then from the content.
    pub fn detect(text: &str, name_hint: Option<&str>) -> Format {
        if let Some(name) = name_hint {
            let lower = name.to_ascii_lowercase();
            if lower.ends_with(".json") {
                return Format::Json;
            }
            if lower.ends_with(".yaml") || lower.ends_with(".yml") {
                return Format::Yaml;
            }
            if lower.ends_with(".md") || lower.ends_with(".markdown") {
                return Format::Markdown;
            }
        }
        let body = text.trim_start_matches('\u{feff}').trim_start();
        if body.starts_with('{') || body.starts_with('[') {
            Format::Json
        } else if body.lines().any(is_markdown_field_line) || body.starts_with('#') {
            Format::Markdown
        } else {
            Format::Yaml
        }
    }

    /// The lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Markdown => "markdown",
            Format::Json => "json",
            Format::Yaml => "yaml",
        }
    }
}

/// A malformed input, located as precisely as the format allows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ParseError {
    /// The input's name (a path, or `<stdin>`).
    pub source_name: String,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// 1-based column, when known.
    pub column: Option<usize>,
    /// The field path (`[1].status`), when the error is about a field.
    pub field: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.source_name)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
            if let Some(col) = self.column {
                write!(f, ":{col}")?;
            }
        }
        if let Some(field) = &self.field {
            write!(f, ": field `{field}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// Parses every summary record of an input.
///
/// `source_name` is only used in error messages. At least one record must be
/// present, and each must have a `summary`.
pub fn parse_records(
    text: &str,
    source_name: &str,
    format: Format,
) -> Result<Vec<SummaryRecord>, ParseError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let records = match format {
        Format::Json => parse_json(text, source_name)?,
        Format::Yaml => parse_yaml(text, source_name)?,
        Format::Markdown => parse_markdown(text, source_name)?,
    };
    if records.is_empty() {
        return Err(ParseError {
            source_name: source_name.to_string(),
            line: None,
            column: None,
            field: None,
            message: format!("no subtask summary found in this {} input", format.as_str()),
        });
    }
    Ok(records)
}

/// One record or a list of records.
struct OneOrMany(Vec<SummaryRecord>);

impl<'de> Deserialize<'de> for OneOrMany {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = OneOrMany;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a subtask summary object or a list of them")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<OneOrMany, A::Error> {
                let mut out = Vec::new();
                while let Some(r) = seq.next_element::<SummaryRecord>()? {
                    out.push(r);
                }
                Ok(OneOrMany(out))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<OneOrMany, A::Error> {
                let r = SummaryRecord::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(OneOrMany(vec![r]))
            }
        }
        d.deserialize_any(V)
    }
}

fn path_of(path: &serde_path_to_error::Path) -> Option<String> {
    let s = path.to_string();
    (s != "." && !s.is_empty()).then_some(s)
}

fn strip_position_suffix(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg.to_string(),
    }
}

fn parse_json(text: &str, source_name: &str) -> Result<Vec<SummaryRecord>, ParseError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let result: Result<OneOrMany, _> = serde_path_to_error::deserialize(&mut de);
    let records = result.map_err(|e| {
        let field = path_of(e.path());
        let inner = e.into_inner();
        ParseError {
            source_name: source_name.to_string(),
            line: (inner.line() > 0).then_some(inner.line()),
            column: (inner.column() > 0).then_some(inner.column()),
            field,
            message: strip_position_suffix(&inner.to_string()),
        }
    })?;
    de.end().map_err(|e| ParseError {
        source_name: source_name.to_string(),
        line: Some(e.line()),
        column: Some(e.column()),
        field: None,
        message: strip_position_suffix(&e.to_string()),
    })?;
    Ok(records.0)
}

fn parse_yaml(text: &str, source_name: &str) -> Result<Vec<SummaryRecord>, ParseError> {
    let de = yaml_serde::Deserializer::from_str(text);
    let result: Result<OneOrMany, _> = serde_path_to_error::deserialize(de);
    let records = result.map_err(|e| {
        let field = path_of(e.path());
        let inner = e.into_inner();
        let loc = inner.location();
        ParseError {
            source_name: source_name.to_string(),
            line: loc.as_ref().map(|l| l.line()),
            column: loc.as_ref().map(|l| l.column()),
            field,
            message: strip_position_suffix(&inner.to_string()),
        }
    })?;
    Ok(records.0)
}

/// True for `**key:** value` and `- **key:** value` lines.
fn is_markdown_field_line(line: &str) -> bool {
    split_markdown_field(line).is_some()
}

/// Splits `**key:** value`, `**key**: value` and `- **key:** value`.
fn split_markdown_field(line: &str) -> Option<(&str, &str)> {
    let t = line.trim_start();
    let t = t
        .strip_prefix("- ")
        .or_else(|| t.strip_prefix("* "))
        .unwrap_or(t)
        .trim_start();
    let rest = t.strip_prefix("**")?;
    let close = rest.find("**")?;
    let inner = &rest[..close];
    let after = &rest[close + 2..];
    let (key, value) = if let Some(k) = inner.strip_suffix(':') {
        (k, after)
    } else {
        (inner, after.strip_prefix(':')?)
    };
    let key = key.trim();
    if key.is_empty()
        || key.len() > 40
        || !key
            .chars()
            .all(|c| c.is_alphanumeric() || "_- ".contains(c))
    {
        return None;
    }
    Some((key, value.trim()))
}

/// Heading level and text of a markdown ATX heading.
fn heading(line: &str) -> Option<(usize, &str)> {
    let t = line.trim_end();
    let level = t.bytes().take_while(|&b| b == b'#').count();
    if level == 0 || level > 6 {
        return None;
    }
    let rest = &t[level..];
    if !rest.is_empty() && !rest.starts_with(' ') {
        return None;
    }
    Some((level, rest.trim()))
}

fn is_summary_heading(text: &str) -> bool {
    let norm: String = text
        .chars()
        .map(|c| {
            if c == ' ' || c == '-' {
                '_'
            } else {
                c.to_ascii_lowercase()
            }
        })
        .collect();
    norm == "subtask_summary"
}

struct Block<'a> {
    first_line: usize,
    lines: Vec<(usize, &'a str)>,
}

fn parse_markdown(text: &str, source_name: &str) -> Result<Vec<SummaryRecord>, ParseError> {
    let all: Vec<(usize, &str)> = text.lines().enumerate().map(|(i, l)| (i + 1, l)).collect();
    let mut blocks: Vec<Block<'_>> = Vec::new();
    let mut current: Option<(usize, Block<'_>)> = None;
    let mut in_fence = false;
    for &(no, line) in &all {
        let is_fence = line.trim_start().starts_with("```") || line.trim_start().starts_with("~~~");
        if !in_fence && let Some((level, title)) = heading(line) {
            if is_summary_heading(title) {
                if let Some((_, b)) = current.take() {
                    blocks.push(b);
                }
                current = Some((
                    level,
                    Block {
                        first_line: no,
                        lines: Vec::new(),
                    },
                ));
                continue;
            }
            if let Some((lvl, _)) = &current
                && level <= *lvl
                && let Some((_, b)) = current.take()
            {
                blocks.push(b);
            }
        }
        if is_fence {
            in_fence = !in_fence;
        }
        if let Some((_, b)) = current.as_mut() {
            b.lines.push((no, line));
        }
    }
    if let Some((_, b)) = current.take() {
        blocks.push(b);
    }
    if blocks.is_empty() {
        // A file of bare `**key:** value` lines is one record.
        if all.iter().any(|(_, l)| is_markdown_field_line(l)) {
            blocks.push(Block {
                first_line: 1,
                lines: all.clone(),
            });
        } else {
            return Err(ParseError {
                source_name: source_name.to_string(),
                line: None,
                column: None,
                field: None,
                message: "no `## subtask_summary` block and no `**field:** value` lines found"
                    .to_string(),
            });
        }
    }
    blocks
        .iter()
        .map(|b| parse_markdown_block(b, source_name))
        .collect()
}

fn parse_markdown_block(block: &Block<'_>, source_name: &str) -> Result<SummaryRecord, ParseError> {
    let mut record = SummaryRecord::default();
    // (field, key as written, line, collected value lines)
    let mut fields: Vec<(Option<Field>, String, usize, Vec<String>)> = Vec::new();
    let mut in_fence = false;
    let mut fence_reported = false;
    for &(no, line) in &block.lines {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            // Raw output pasted into a summary is never promoted (Layer 1).
            if !in_fence && !fence_reported {
                let owner = fields
                    .last()
                    .map(|(_, k, _, _)| k.clone())
                    .unwrap_or_else(|| "subtask_summary".into());
                record.dropped.push(DroppedField {
                    name: format!("{owner} (fenced block)"),
                    line: Some(no),
                });
                fence_reported = true;
            }
            in_fence = !in_fence;
            if !in_fence {
                fence_reported = false;
            }
            continue;
        }
        if in_fence {
            continue;
        }
        if let Some((key, value)) = split_markdown_field(line) {
            let field = field_for(key);
            let mut lines = Vec::new();
            if !value.is_empty() {
                lines.push(value.to_string());
            }
            fields.push((field, key.to_string(), no, lines));
            continue;
        }
        if let Some((_, _, _, lines)) = fields.last_mut() {
            let t = line.trim();
            if !t.is_empty() {
                lines.push(t.to_string());
            }
        }
    }
    if in_fence {
        return Err(ParseError {
            source_name: source_name.to_string(),
            line: block.lines.last().map(|(n, _)| *n),
            column: None,
            field: None,
            message: "a fenced code block is never closed".into(),
        });
    }
    let mut saw_summary = false;
    for (field, key, line, lines) in fields {
        let Some(field) = field else {
            record.dropped.push(DroppedField {
                name: key,
                line: Some(line),
            });
            continue;
        };
        let value = match field {
            Field::Files | Field::Blockers | Field::Unblocks => lines.join("\n"),
            _ => lines.join(" "),
        };
        if field == Field::Summary {
            saw_summary = true;
        }
        record
            .apply_text(field, &value)
            .map_err(|message| ParseError {
                source_name: source_name.to_string(),
                line: Some(line),
                column: None,
                field: Some(key.clone()),
                message,
            })?;
    }
    record.dropped.sort_by_key(|d| d.line);
    if !saw_summary {
        return Err(ParseError {
            source_name: source_name.to_string(),
            line: Some(block.first_line),
            column: None,
            field: Some("summary".into()),
            message: "missing; every subtask summary needs a `**summary:**` line".into(),
        });
    }
    Ok(record)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Status;

    #[test]
    fn markdown_block_with_list_and_noise() {
        let md = "# IMPL\n\nintro\n\n## subtask_summary\n**files_changed:**\n- a/b.rs\n- c/d.rs\n**summary:** Added the orders endpoint.\nIt returns 201.\n**tests:** ✅ All passing\n**status:** partial (one flaky test)\n**blockers:** null\n**stdout:** lots of noise\n```\nraw test output\n```\n\n## Next\nnot part of it\n";
        let recs = parse_records(md, "x.md", Format::Markdown).unwrap();
        assert_eq!(recs.len(), 1);
        let r = &recs[0];
        assert_eq!(r.files_changed, vec!["a/b.rs", "c/d.rs"]);
        assert_eq!(r.summary, "Added the orders endpoint. It returns 201.");
        assert_eq!(r.status, Some(Status::Partial));
        assert_eq!(r.status_reason.as_deref(), Some("one flaky test"));
        assert!(r.blockers.is_empty());
        let dropped: Vec<_> = r
            .dropped
            .iter()
            .map(|d| (d.name.as_str(), d.line))
            .collect();
        assert_eq!(
            dropped,
            vec![("stdout", Some(14)), ("stdout (fenced block)", Some(15))]
        );
    }

    #[test]
    fn json_error_has_line_and_field() {
        let json =
            "[\n {\"summary\": \"ok\"},\n {\"summary\": \"x\",\n  \"status\": \"shipped\"}\n]";
        let err = parse_records(json, "in.json", Format::Json).unwrap_err();
        assert_eq!(err.line, Some(4));
        assert_eq!(err.field.as_deref(), Some("[1].status"));
        assert!(err.message.contains("not a status"), "{err}");
    }

    #[test]
    fn yaml_list() {
        let y = "- agent: hermes\n  summary: Added POST /api/orders\n  files_changed: [a.py, b.py]\n  env: SECRET=1\n- agent: demeter\n  summary: New table orders\n";
        let recs = parse_records(y, "in.yaml", Format::Yaml).unwrap();
        assert_eq!(recs.len(), 2);
        assert_eq!(recs[0].files_changed, vec!["a.py", "b.py"]);
        assert_eq!(recs[0].dropped[0].name, "env");
        assert_eq!(recs[1].agent.as_deref(), Some("demeter"));
    }

    #[test]
    fn yaml_error_located() {
        let y = "- summary: a\n- summary: b\n  critical_issues: lots\n";
        let err = parse_records(y, "in.yaml", Format::Yaml).unwrap_err();
        assert_eq!(err.line, Some(3), "{err}");
        assert_eq!(err.field.as_deref(), Some("[1].critical_issues"));
    }

    #[test]
    fn detect() {
        assert_eq!(Format::detect("{}", None), Format::Json);
        assert_eq!(
            Format::detect("## subtask_summary\n**summary:** x", None),
            Format::Markdown
        );
        assert_eq!(Format::detect("summary: x", None), Format::Yaml);
        assert_eq!(Format::detect("summary: x", Some("a.md")), Format::Markdown);
    }
}
