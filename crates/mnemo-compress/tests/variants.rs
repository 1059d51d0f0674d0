#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Seed §4 "Variants Per Agent Pair": for each pair of the default roster
//! the sentences that carry the kinds of fact the receiver asks for lead an
//! expanded entry (after its lead sentence); the others follow in the
//! agent's order, and every fact stays. One test per variant.

use mnemo_compress::budget::Mode;
use mnemo_compress::mask::{FieldMask, entry_fields};
use mnemo_compress::summary::{DeterministicSummarizer, Summarizer, SummaryRequest};
use mnemo_model::{Config, SummaryRecord, Verdict};
use mnemo_score::Band;

const LEAD: &str = "Shipped the billing work in the billing-api service today.";
/// A sentence no variant asks for (a duration); it comes first in the input.
const OTHER: &str = "Cached totals are kept for 60 s before a refresh.";

/// The entry's lines joined, for `from → to`, of a summary whose sentences
/// are the lead, [`OTHER`], then `wanted`.
fn lines(from: &str, to: &str, wanted: &str) -> String {
    let config = Config::default();
    let s = DeterministicSummarizer::new(&config);
    let r = SummaryRecord {
        agent: Some(from.into()),
        summary: format!("{LEAD} {OTHER} {wanted}"),
        ..SummaryRecord::default()
    };
    s.summarize(&SummaryRequest {
        record: &r,
        band: Band::High,
        mode: Mode::Expanded,
        from,
        to: Some(to),
    })
    .unwrap()
    .lines()
    .join(" ")
}

fn pos(t: &str, f: &str) -> usize {
    t.find(f).unwrap_or_else(|| panic!("{f:?} not in {t:?}"))
}

/// `wanted` leads for `from → to` and comes last for a pair without a
/// variant (`from → prometheus` has none for these senders).
fn leads(from: &str, to: &str, wanted: &str) {
    let t = lines(from, to, wanted);
    assert!(t.starts_with("Shipped the billing work"), "{t}");
    // The lines drop a clause's leading article (extractive::telegraph).
    let key = &wanted.trim_start_matches("The ")[..16];
    assert!(pos(&t, key) < pos(&t, "Cached totals"), "{from}→{to}: {t}");
    assert!(t.contains("60 s"), "{t}");
    let plain = lines(from, "prometheus", wanted);
    assert!(
        pos(&plain, "Cached totals") < pos(&plain, key),
        "{from}→prometheus keeps the order: {plain}"
    );
}

#[test]
fn hermes_to_aphrodite_leads_with_endpoints_and_status_codes() {
    leads(
        "hermes",
        "aphrodite",
        "POST /invoices returns 201 Created with the new id.",
    );
}

#[test]
fn hermes_to_demeter_leads_with_tables_and_foreign_keys() {
    leads(
        "hermes",
        "demeter",
        "The new table invoices has a foreign key to customers(id).",
    );
}

#[test]
fn demeter_to_hermes_leads_with_tables_and_migrations() {
    leads(
        "demeter",
        "hermes",
        "Migration 0042_invoices creates table invoices (id bigserial, total_cents bigint).",
    );
}

#[test]
fn demeter_to_aphrodite_leads_with_fields_types_and_defaults() {
    leads(
        "demeter",
        "aphrodite",
        "Column invoices.status is text with default 'draft'.",
    );
}

#[test]
fn aphrodite_to_hermes_leads_with_components_and_data_needs() {
    leads(
        "aphrodite",
        "hermes",
        "The InvoiceTable component needs GET /invoices?status=open.",
    );
}

#[test]
fn aphrodite_to_demeter_leads_with_ui_state_and_fields() {
    leads(
        "aphrodite",
        "demeter",
        "The filter state is {status, from, to} and shows column invoices.total_cents.",
    );
}

#[test]
fn hephaestus_to_hermes_leads_with_pipeline_io_and_model_endpoints() {
    leads(
        "hephaestus",
        "hermes",
        "The scorer answers POST /score with {invoice_id, risk}.",
    );
}

#[test]
fn prometheus_to_hermes_leads_with_deploy_target_and_env_vars() {
    let wanted = "BILLING_DB_URL (default postgres://db:5432/billing) must be set.";
    let t = lines("prometheus", "hermes", wanted);
    assert!(pos(&t, "BILLING_DB_URL") < pos(&t, "Cached totals"), "{t}");
    // Prometheus → Aphrodite has no variant: the agent's order stays.
    let plain = lines("prometheus", "aphrodite", wanted);
    assert!(
        pos(&plain, "Cached totals") < pos(&plain, "BILLING_DB_URL"),
        "{plain}"
    );
}

#[test]
fn anyone_to_themis_keeps_everything_in_order_and_every_field() {
    // `* → themis` asks for all: no reordering…
    let wanted = "POST /invoices returns 201 Created with the new id.";
    let t = lines("hermes", "themis", wanted);
    assert!(pos(&t, "Cached totals") < pos(&t, "POST /invoices"), "{t}");
    // …and every report field, the verdict included (the mask alone has none).
    let config = Config::default();
    let r = SummaryRecord {
        agent: Some("themis".into()),
        summary: "Reviewed notifications: approved.".into(),
        verdict: Some(Verdict::Approved),
        critical_issues: Some(1),
        ..SummaryRecord::default()
    };
    let mask = FieldMask::for_pair(&config, "themis", "themis");
    assert!(!mask.verdict);
    let shown = mask.with_variant(&config, "themis", "themis");
    let f = entry_fields(&r, &shown, "Reviewed notifications: approved.");
    assert!(f.notes.contains(&"APPROVED".to_string()), "{f:?}");
    assert!(f.notes.contains(&"1 critical issue".to_string()), "{f:?}");
    // Without the variant the lower-case "approved" would be all there is.
    assert!(
        entry_fields(&r, &mask, "")
            .notes
            .iter()
            .all(|n| !n.contains("APPROVED"))
    );
}

#[test]
fn themis_to_anyone_shows_verdict_and_issue_count() {
    let config = Config::default();
    let r = SummaryRecord {
        agent: Some("themis".into()),
        summary: "Infrastructure review: two critical issues.".into(),
        verdict: Some(Verdict::NeedsRevision),
        critical_issues: Some(2),
        coverage: Some("71%".into()),
        ..SummaryRecord::default()
    };
    let shown =
        FieldMask::for_pair(&config, "themis", "hermes").with_variant(&config, "themis", "hermes");
    let f = entry_fields(&r, &shown, "Infrastructure review: two critical issues.");
    assert!(f.notes.contains(&"NEEDS_REVISION".to_string()), "{f:?}");
    assert!(f.notes.contains(&"coverage 71%".to_string()), "{f:?}");
    // "two critical issues" is said already: the count is not repeated.
    assert!(
        f.notes.iter().all(|n| !n.contains("critical issue")),
        "{f:?}"
    );
    let f = entry_fields(&r, &shown, "Infrastructure review.");
    assert!(f.notes.contains(&"2 critical issues".to_string()), "{f:?}");
}

#[test]
fn anyone_to_mnemosyne_keeps_the_summary_limit_and_the_status() {
    let config = Config::default();
    let shown = FieldMask::for_pair(&config, "hermes", "mnemosyne").with_variant(
        &config,
        "hermes",
        "mnemosyne",
    );
    // The variant names `summary` and `status`: the mask's 60-character
    // summary limit stays, the status is shown.
    assert_eq!(shown.summary, Some(Some(60)));
    assert!(shown.status);
    assert!(!shown.verdict);
}
