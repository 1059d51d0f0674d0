//! The pre-tokenisation regex is compiled only for text the hand
//! pre-tokeniser cannot place (its own process: the flag is global).
#![allow(clippy::unwrap_used)]

#[test]
fn ascii_and_symbols_count_without_the_regex() {
    let text = "# mnemo trail\n## Commands\n- `cargo test -p billing` → exit 101: thread panicked … “x” — done\r\n\tdon't  stop 12345\n";
    assert_eq!(
        mnemo_tokens::count_o200k(text),
        Ok(bpe_openai::o200k_base().count(text))
    );
    assert!(mnemo_tokens::is_loaded());
    assert!(!mnemo_tokens::is_regex_compiled());
    // a letter outside ASCII needs it
    assert_eq!(
        mnemo_tokens::count_o200k("café"),
        Ok(bpe_openai::o200k_base().count("café"))
    );
    assert!(mnemo_tokens::is_regex_compiled());
}
