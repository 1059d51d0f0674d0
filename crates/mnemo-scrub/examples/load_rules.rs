//! The per-process set-up cost of the built-in rules, for callgrind:
//! loads them and checks what a hook checks (short identifiers) and one
//! short text, then prints the number of findings.
//!
//! ```text
//! cargo build --release -p mnemo-scrub --example load_rules
//! valgrind --tool=callgrind target/release/examples/load_rules
//! ```

use mnemo_scrub::Scrubber;

fn main() -> std::process::ExitCode {
    let scrubber = match Scrubber::default_rules() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("load_rules: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let mut findings = 0usize;
    for id in [
        "00000000-0000-4000-8000-000000000998",
        "claude-code",
        "steps/preCompact",
        "Bash",
        "https://example.com",
    ] {
        findings += scrubber.find(id).len();
    }
    let text = "The build passed; see logs/ci.txt.\nexport API_TOKEN=ghp_Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7c\n";
    findings += scrubber.find(text).len();
    println!("findings={findings}");
    std::process::ExitCode::SUCCESS
}
