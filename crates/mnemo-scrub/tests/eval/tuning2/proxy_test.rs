#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn basic_auth_from_rfc_7617() {
        // RFC 7617's own example user
        let p = Proxy::parse("http://Aladdin:opensesame@proxy.local:3128").unwrap();
        assert_eq!(p.auth(), Some(("Aladdin", "opensesame")));
    }

    #[test]
    fn rejects_a_short_password() {
        let err = validate(&json!({"username": "bob", "password": "secret123"})).unwrap_err();
        assert!(err.to_string().contains("minLength"));
        let err = validate(&json!({"password": "hunter2"})).unwrap_err();
        assert!(err.to_string().contains("minLength"));
    }

    #[test]
    fn quotes_alter_user() {
        // ALTER USER joe PASSWORD 'pwd' must not be logged in clear text
        assert_eq!(quote("pwd"), "'pwd'");
    }
}

// Production proxy of the nightly crawler (moved to vault in 2025-03)
const CRAWLER_PROXY: &str = "https://crawler:EzAKud0XR4TO@proxy.corp.acme.dev:8080";
