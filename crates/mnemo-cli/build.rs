//! Links `mnemo` as a position-dependent executable: a PIE binary of this
//! size carries about 20,000 relative relocations, which the dynamic loader
//! applies at every start (over a millisecond, most of `mnemo inline
//! score`'s run time); a non-PIE executable has none to apply.
fn main() {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bin=mnemo=-no-pie");
    }
    println!("cargo::rerun-if-changed=build.rs");
}
