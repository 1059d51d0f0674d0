//! Property tests of the transcript parser and the budget: any line, JSON or
//! not, of any shape, never panics; every fact is either shown or counted;
//! the trail never exceeds its budget.

use mnemo_trail::Extractor;
use mnemo_trail::parse::HostKind;
use proptest::prelude::*;
use serde_json::{Value, json};

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z0-9 ./_-]{0,40}",
        Just("Never push to main. We chose X instead of Y.".to_string()),
        Just("Exit code 2\nboom".to_string()),
        Just("The port is 8080 and DATABASE_URL is set".to_string()),
        "\\PC{0,30}",
    ]
}

fn block() -> impl Strategy<Value = Value> {
    prop_oneof![
        text().prop_map(|t| json!({"type": "text", "text": t})),
        (text(), text()).prop_map(|(id, c)| json!({"type": "tool_use", "id": id, "name": "Bash", "input": {"command": c}})),
        (text(), text()).prop_map(|(id, p)| json!({"type": "tool_use", "id": id, "name": "Edit", "input": {"file_path": p}})),
        (text(), text(), any::<bool>()).prop_map(|(id, c, e)| json!({"type": "tool_result", "tool_use_id": id, "content": c, "is_error": e})),
        Just(json!({"type": "tool_result"})),
        Just(json!(null)),
        Just(json!(7)),
    ]
}

fn line() -> impl Strategy<Value = String> {
    prop_oneof![
        // Claude Code shapes
        (prop_oneof![Just("user"), Just("assistant"), Just("system")], prop::collection::vec(block(), 0..4), any::<bool>())
            .prop_map(|(k, b, meta)| json!({"type": k, "isMeta": meta, "cwd": "/r", "message": {"content": b}}).to_string()),
        (prop_oneof![Just("user"), Just("assistant")], text())
            .prop_map(|(k, t)| json!({"type": k, "message": {"content": t}}).to_string()),
        // Codex shapes
        (text(), text()).prop_map(|(id, c)| json!({"type": "response_item", "payload": {"type": "function_call", "name": "shell", "call_id": id, "arguments": json!({"command": ["bash", "-lc", c]}).to_string()}}).to_string()),
        (text(), text()).prop_map(|(id, o)| json!({"type": "response_item", "payload": {"type": "function_call_output", "call_id": id, "output": o}}).to_string()),
        (text(), text()).prop_map(|(id, o)| json!({"type": "response_item", "payload": {"type": "custom_tool_call", "name": "apply_patch", "call_id": id, "input": format!("*** Update File: {o}\n")}}).to_string()),
        text().prop_map(|t| json!({"type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": t}]}}).to_string()),
        Just(json!({"type": "compacted", "payload": {}}).to_string()),
        // OpenCode shapes
        (text(), any::<i64>()).prop_map(|(c, e)| json!({"info": {"role": "assistant"}, "parts": [{"type": "tool", "tool": "bash", "state": {"status": "completed", "input": {"command": c}, "metadata": {"exit": e}}}]}).to_string()),
        // Not JSON, or JSON of the wrong shape
        "\\PC{0,60}",
        Just("{\"type\":".to_string()),
        Just("[1,2,3]".to_string()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn any_lines_give_a_bounded_accounted_trail(
        lines in prop::collection::vec(line(), 0..40),
        budget in 0usize..600,
        host in prop_oneof![Just(None), Just(Some(HostKind::ClaudeCode)), Just(Some(HostKind::Codex)), Just(Some(HostKind::OpenCode))],
    ) {
        let mut x = Extractor::new(host);
        for l in &lines {
            x.push_line(l);
        }
        let t = x.finish(budget).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(t.shown + t.omitted, t.facts.len());
        prop_assert_eq!(t.omitted_by_kind.values().sum::<usize>(), t.omitted);
        prop_assert!(t.tokens <= budget || t.shown == 0, "{} tokens over {}", t.tokens, budget);
        for f in t.facts.iter().filter(|f| f.shown) {
            prop_assert!(t.text.contains(&f.text));
        }
        if t.omitted > 0 {
            prop_assert!(t.text.contains("Not shown:") || t.shown == 0);
        }
    }

    #[test]
    fn a_failing_command_is_a_blocker_until_it_passes(cmd in "[a-z]{2,8}( [a-z0-9-]{1,6}){0,3}", code in 1i64..255) {
        let fail = json!({"type": "assistant", "message": {"content": [{"type": "tool_use", "id": "a", "name": "Bash", "input": {"command": cmd}}]}}).to_string();
        let res = json!({"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "a", "is_error": true, "content": format!("Exit code {code}\nerr")}]}}).to_string();
        let mut x = Extractor::new(None);
        x.push_line(&fail);
        x.push_line(&res);
        let t = x.finish(1500).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let want = format!("exit {code}");
        prop_assert!(t.facts.iter().any(|f| f.kind == mnemo_trail::FactKind::Blocker && f.text.contains(&want)), "{:?}", t.facts);
    }

    #[test]
    fn bytes_and_text_read_every_line_alike(
        lines in prop::collection::vec((line(), 0usize..6, any::<u8>()), 0..30),
    ) {
        // Each line as a file holds it: as is, with invalid UTF-8 inside,
        // with white space JSON does not allow around it, with CRLF.
        let raw: Vec<Vec<u8>> = lines
            .iter()
            .map(|(l, how, b)| {
                let mut v = l.clone().into_bytes();
                match how {
                    1 => {
                        let at = usize::from(*b) % (v.len() + 1);
                        v.insert(at, 0xff);
                    }
                    2 => v.splice(0..0, "\u{a0}".bytes()).for_each(drop),
                    3 => v.splice(0..0, [0x0b]).for_each(drop),
                    4 => v.extend_from_slice(b"\r\n"),
                    5 => v = b" \t ".to_vec(),
                    _ => {}
                }
                v
            })
            .collect();
        let mut by_bytes = Extractor::new(None);
        let mut by_text = Extractor::new(None);
        for l in &raw {
            by_bytes.push_bytes(l);
            by_text.push_line(&String::from_utf8_lossy(l));
        }
        let a = by_bytes.finish(300).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let b = by_text.finish(300).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(a, b);
    }
}
