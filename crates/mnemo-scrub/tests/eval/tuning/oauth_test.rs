#[test]
fn m2m_flow() {
    let cfg = Config { client_id: "test-m2m-client", client_secret: "test-m2m-secret", ..Config::default() };
    assert!(cfg.validate().is_ok());
}
