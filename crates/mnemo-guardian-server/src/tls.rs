//! TLS for the HTTP transport with `rustls` (the `ring` provider): the
//! server's configuration from PEM files (certificate chain, private key,
//! optional client-certificate CA), and the client's (the system's roots or
//! a given CA, optional client certificate). I/O: reads the files named.

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A TLS configuration failure, naming the file.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A PEM file could not be read or held nothing usable.
    #[error("{path}: {message}")]
    File {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        message: String,
    },
    /// rustls refused the configuration (for example a key that does not
    /// match the certificate).
    #[error("TLS configuration: {0}")]
    Config(String),
}

/// The server's certificate files.
#[derive(Debug, Clone)]
pub struct ServerTls {
    /// PEM certificate chain, leaf first.
    pub cert: PathBuf,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
    /// When set, clients must present a certificate issued by a CA in this
    /// PEM file.
    pub client_ca: Option<PathBuf>,
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn file_err(path: &Path, message: impl Into<String>) -> TlsError {
    TlsError::File {
        path: path.to_path_buf(),
        message: message.into(),
    }
}

/// Reads every certificate of a PEM file (at least one).
pub fn load_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
        .map_err(|e| file_err(path, e.to_string()))?
        .collect::<Result<_, _>>()
        .map_err(|e| file_err(path, e.to_string()))?;
    if certs.is_empty() {
        return Err(file_err(path, "no CERTIFICATE in this PEM file"));
    }
    Ok(certs)
}

/// Reads the first private key of a PEM file.
pub fn load_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    PrivateKeyDer::from_pem_file(path).map_err(|e| file_err(path, format!("private key: {e}")))
}

fn roots_from(path: &Path) -> Result<rustls::RootCertStore, TlsError> {
    let mut roots = rustls::RootCertStore::empty();
    for c in load_certs(path)? {
        roots
            .add(c)
            .map_err(|e| file_err(path, format!("CA certificate: {e}")))?;
    }
    Ok(roots)
}

impl ServerTls {
    /// Builds the rustls server configuration (HTTP/1.1 over ALPN).
    pub fn config(&self) -> Result<Arc<rustls::ServerConfig>, TlsError> {
        let certs = load_certs(&self.cert)?;
        let key = load_key(&self.key)?;
        let builder = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError::Config(e.to_string()))?;
        let builder = match &self.client_ca {
            None => builder.with_no_client_auth(),
            Some(ca) => {
                let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                    Arc::new(roots_from(ca)?),
                    provider(),
                )
                .build()
                .map_err(|e| file_err(ca, e.to_string()))?;
                builder.with_client_cert_verifier(verifier)
            }
        };
        let mut config = builder
            .with_single_cert(certs, key)
            .map_err(|e| TlsError::Config(format!("{}: {e}", self.key.display())))?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }
}

/// A client configuration: trusting the CAs of `ca` (PEM) when given,
/// else the system's roots; presenting `identity` (certificate chain and
/// key files) when given.
pub fn client_config(
    ca: Option<&Path>,
    identity: Option<(&Path, &Path)>,
) -> Result<Arc<rustls::ClientConfig>, TlsError> {
    let roots = match ca {
        Some(p) => roots_from(p)?,
        None => {
            let mut roots = rustls::RootCertStore::empty();
            for c in rustls_native_certs::load_native_certs().certs {
                let _ = roots.add(c);
            }
            if roots.is_empty() {
                return Err(TlsError::Config(
                    "no system CA certificates found; name a CA file".into(),
                ));
            }
            roots
        }
    };
    let builder = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Config(e.to_string()))?
        .with_root_certificates(roots);
    let mut config = match identity {
        None => builder.with_no_client_auth(),
        Some((cert, key)) => builder
            .with_client_auth_cert(load_certs(cert)?, load_key(key)?)
            .map_err(|e| TlsError::Config(format!("{}: {e}", key.display())))?,
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}
