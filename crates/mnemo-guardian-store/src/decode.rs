//! Column values both SQL stores read back the same way (chain hashes as
//! bytes, verdicts as words); a value that does not decode is corruption.

use mnemo_acs::chain::Hash;
use mnemo_acs::model::Verdict;
use mnemo_guardian::store::StoreError;

pub(crate) fn hash_from(bytes: Vec<u8>) -> Result<Hash, StoreError> {
    bytes
        .try_into()
        .map_err(|_| StoreError::Corrupt("chain hash length".into()))
}

pub(crate) fn verdict_from(s: &str) -> Result<Verdict, StoreError> {
    match s {
        "allow" => Ok(Verdict::Allow),
        "deny" => Ok(Verdict::Deny),
        "modify" => Ok(Verdict::Modify),
        other => Err(StoreError::Corrupt(format!("verdict {other}"))),
    }
}
