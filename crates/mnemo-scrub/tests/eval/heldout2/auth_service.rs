//! Login, password hashing and session tokens.

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use secrecy::{ExposeSecret, SecretString};
use tokio_util::sync::CancellationToken;

pub const PASSWORD_MIN_LEN: usize = 12;
pub const TOKEN_TTL_SECS: u64 = 3600;

#[derive(Debug, Clone)]
pub struct Credentials {
    pub username: String,
    pub password: SecretString,
}

#[derive(Debug, serde::Serialize)]
pub struct TokenResponse {
    pub access_token: String,
    pub token_type: &'static str,
    pub expires_in: u64,
    pub refresh_token: Option<String>,
}

pub struct AuthService {
    hasher: Argon2<'static>,
    secret: Vec<u8>,
    shutdown: CancellationToken,
    client_secret: Option<SecretString>,
}

impl AuthService {
    pub fn new(secret: &[u8], config: &crate::Config) -> Self {
        let token = CancellationToken::new();
        Self {
            hasher: Argon2::default(),
            secret: secret.to_vec(),
            shutdown: token,
            client_secret: config.client_secret.clone(),
        }
    }

    pub fn hash_password(&self, password: &str) -> Result<String, AuthError> {
        if password.len() < PASSWORD_MIN_LEN {
            return Err(AuthError::PasswordTooShort);
        }
        let salt = SaltString::generate(&mut rand::thread_rng());
        let password_hash = self.hasher.hash_password(password.as_bytes(), &salt)?;
        Ok(password_hash.to_string())
    }

    pub fn verify_password(&self, creds: &Credentials, stored: &str) -> Result<(), AuthError> {
        let parsed = PasswordHash::new(stored)?;
        let password = creds.password.expose_secret();
        self.hasher.verify_password(password.as_bytes(), &parsed)?;
        Ok(())
    }

    pub fn issue(&self, user: &str) -> TokenResponse {
        let access_token = crate::jwt::sign(&self.secret, user, TOKEN_TTL_SECS);
        TokenResponse { access_token, token_type: "Bearer", expires_in: TOKEN_TTL_SECS, refresh_token: None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_the_wrong_password() {
        let svc = AuthService::new(b"test-signing-key", &crate::Config::default());
        let stored = svc.hash_password("correct-password-for-tests").unwrap();
        let creds = Credentials { username: "alice".into(), password: SecretString::from("wrong-password") };
        assert!(svc.verify_password(&creds, &stored).is_err());
    }
}
