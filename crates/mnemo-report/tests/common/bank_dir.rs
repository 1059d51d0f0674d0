// A bank directory read into `BankFiles` as `mnemo report` reads it
// (sorted ZZ artifacts and archives), for the crate's tests and its
// `report_bench` example (both through `#[path]`).

use std::path::Path;

use mnemo_report::BankFiles;

pub fn read_dir_files(root: &Path, dir: &str, prefix: &str, suffix: &str) -> Vec<(String, String)> {
    let mut names: Vec<String> = std::fs::read_dir(root.join(dir))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|n| n.starts_with(prefix) && n.ends_with(suffix))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
        .into_iter()
        .map(|n| {
            let rel = format!("{dir}/{n}");
            let text = std::fs::read_to_string(root.join(&rel)).unwrap();
            (rel, text)
        })
        .collect()
}

pub fn bank_files(root: &Path) -> BankFiles {
    let read = |rel: &str| std::fs::read_to_string(root.join(rel)).ok();
    BankFiles {
        active_context: read("01-active-context.md"),
        progress_log: read("02-progress-log.md"),
        xref_index: read("_xref/index.md"),
        zz: read_dir_files(root, ".tmp", "ZZ-phase", "-context.md"),
        archives: read_dir_files(root, "_notes/archive", "", "-compressed-entries.md"),
        gate_log: read("_xref/gate-log.jsonl"),
    }
}
